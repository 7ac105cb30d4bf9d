import type { FleetApi } from '../http-api.js';
import type { Endpoint } from '../load/messages.js';
import { log } from '../log.js';
import { FleetServer, ServerRefusedError } from '../server/fleet-server.js';
import { hasPostgres, startPostgres, PG_SERVER_SETTINGS } from '../server/postgres.js';
import { sleep } from '../../util/sleep.js';
import type { ServerProbe } from './fanout.js';
import { replicasProbe, serverProbe, orgWithDevice } from './fleet-setup.js';
import { endpointOf, fleetWatchSpec } from './watch-spec.js';
import { LoadPool } from '../load/pool.js';

/** How the server scales out: one server with several worker processes, or several replicas. */
export type ScaleOutMode = { kind: 'workers'; workers: number } | { kind: 'replicas'; replicas: number };

/** The scale-out can't be measured here; the message says why (the scenario is skipped with it). */
export class ScaleOutUnavailable extends Error {
  override readonly name = 'ScaleOutUnavailable';
}

/** Servers on one PostgreSQL, ready for watchers (spread over `endpoints`) and writes (through `api`). */
export interface ScaleOutEnv {
  mode: ScaleOutMode;
  servers: FleetServer[];
  endpoints: Endpoint[];
  api: FleetApi;
  probe: ServerProbe;
  settings: Record<string, unknown>;
  stop(): Promise<void>;
}

const PROBES = 3;
/** A change relayed by the bus arrives in well under this; the safety check (default 5 s) would be slower. */
const PROBE_LIMIT_MS = 500;

/**
 * Starts PostgreSQL and the servers of `mode`. Throws ScaleOutUnavailable
 * when PostgreSQL is absent, the server refuses the flags, or (replicas)
 * a change written through one replica doesn't reach a watcher on another
 * promptly, i.e. the replicas don't relay change signals yet.
 */
export async function startScaleOut(mode: ScaleOutMode, signal: AbortSignal): Promise<ScaleOutEnv> {
  if (!hasPostgres()) throw new ScaleOutUnavailable('PostgreSQL is not installed (/usr/lib/postgresql/15/bin); scale-out needs it');
  const pg = await startPostgres();
  const servers: FleetServer[] = [];
  const stop = async (): Promise<void> => {
    for (const s of servers) await s.stop();
    pg.stop();
  };
  try {
    const databaseUrl = await pg.createDatabase('scaleout');
    if (mode.kind === 'workers') {
      servers.push(await startOrExplain({ databaseUrl, flags: ['--workers', String(mode.workers)] }, `--workers ${mode.workers}`));
    } else {
      for (let i = 0; i < mode.replicas; i++) servers.push(await startOrExplain({ databaseUrl, flags: ['--bus', 'postgres'] }, `replica ${i + 1} with --bus postgres`));
    }
    const first = servers[0];
    if (!first) throw new ScaleOutUnavailable('no server started');
    const api = first.api();
    const env: ScaleOutEnv = {
      mode,
      servers,
      endpoints: servers.map((s) => endpointOf(s.url)),
      api,
      probe: mode.kind === 'workers' ? serverProbe(first, api) : replicasProbe(servers),
      settings: { storage: 'postgresql (throwaway cluster)', postgresSettings: PG_SERVER_SETTINGS, servers: servers.map((s) => s.commandLine) },
      async stop() {
        api.close();
        await stop();
      },
    };
    if (mode.kind === 'replicas') await probeRelay(env, signal);
    return env;
  } catch (err) {
    await stop();
    throw err;
  }
}

async function startOrExplain(opts: { databaseUrl: string; flags: string[] }, what: string): Promise<FleetServer> {
  try {
    return await FleetServer.start(opts);
  } catch (err) {
    if (err instanceof ServerRefusedError) throw new ScaleOutUnavailable(`the server refused ${what}: ${err.stderr.trim().split('\n').pop() ?? ''}`);
    throw err;
  }
}

/** A watcher on the last replica must see a write made through the first, through the bus, fast. */
async function probeRelay(env: ScaleOutEnv, signal: AbortSignal): Promise<void> {
  const last = env.endpoints[env.endpoints.length - 1];
  if (!last || env.endpoints.length < 2) return;
  const { org, deviceId, head } = await orgWithDevice(env.api, 'probe');
  const pool = await LoadPool.start(1);
  try {
    await pool.open(fleetWatchSpec([last], org, head), 1);
    const slow: number[] = [];
    for (let i = 0; i < PROBES; i++) {
      const { device, res } = await env.api.patchDevice(org, deviceId, { hostname: `probe-${i}` });
      const r = await pool.collectChange(device.revision, 10_000);
      const ms = (r.times[0] ?? Number.NaN) - res.sentAt;
      log.debug({ ms }, 'replica relay probe');
      if (!(ms < PROBE_LIMIT_MS)) slow.push(ms);
      await sleep(100, signal);
      signal.throwIfAborted();
    }
    if (slow.length > 0) {
      throw new ScaleOutUnavailable(
        `a change written through replica 1 reached a watcher on replica ${env.endpoints.length} only after ${slow.map((x) => (Number.isNaN(x) ? 'never (10 s)' : `${Math.round(x)} ms`)).join(', ')}: the replicas don't relay change signals yet (bus)`,
      );
    }
  } finally {
    await pool.closeAll();
    await pool.stop();
  }
}
