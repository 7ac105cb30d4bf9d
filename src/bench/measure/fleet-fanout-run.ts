import type { FleetApi } from '../http-api.js';
import type { Endpoint } from '../load/messages.js';
import { LoadPool, workersFor } from '../load/pool.js';
import { measureFleetFanout, type FanoutFigures, type ServerProbe } from './fanout.js';
import { orgWithDevice } from './fleet-setup.js';
import { setupWatchSpec, type WatchSetup } from './watch-spec.js';

/**
 * One fan-out run against running server(s): a fresh organization, N
 * watchers spread over `endpoints` and over load workers, opened as `setup`
 * says (default `tail`), K changes. The load workers are started and stopped here.
 */
export async function fleetFanoutRun(o: {
  api: FleetApi;
  probe: ServerProbe;
  endpoints: Endpoint[];
  n: number;
  changes: number;
  socketsPerWorker: number;
  signal: AbortSignal;
  label: string;
  setup?: WatchSetup;
}): Promise<FanoutFigures> {
  const setup = o.setup ?? 'tail';
  const pool = await LoadPool.start(workersFor(o.n, o.socketsPerWorker));
  try {
    const { org, deviceId, head } = await orgWithDevice(o.api, o.label);
    const orgToken = setup === 'list-org' ? await o.api.createOrgToken(org, 'read', `${o.label} watchers`) : undefined;
    await pool.open(setupWatchSpec(setup, o.endpoints, org, head, orgToken), o.n);
    const figures = await measureFleetFanout({ api: o.api, probe: o.probe, pool, org, deviceId, changes: o.changes, timeoutMs: 30_000, signal: o.signal, label: o.label });
    const c = await pool.counters();
    if (c.errorEvents > 0 || c.closedByServer > 0 || c.unparsedLines > 0) {
      throw new Error(`watch streams misbehaved: ${JSON.stringify({ errorEvents: c.errorCodes, closedByServer: c.closedByServer, unparsed: c.unparsedLines })}`);
    }
    await pool.closeAll();
    return figures;
  } finally {
    await pool.stop();
  }
}
