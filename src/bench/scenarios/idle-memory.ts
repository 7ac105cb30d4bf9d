import type { Scenario, ScenarioResult, TargetResult } from '../scenario.js';
import { FleetServer } from '../server/fleet-server.js';
import { LoadPool, workersFor } from '../load/pool.js';
import type { Endpoint } from '../load/messages.js';
import type { FleetApi } from '../http-api.js';
import { memoryFigures, rawFloorRun, SETTLE_MS, type MemoryFigures } from '../measure/raw-floor-run.js';
import { orgWithDevice } from '../measure/fleet-setup.js';
import { endpointOf, fleetWatchSpec } from '../measure/watch-spec.js';
import { ScaleOutUnavailable, startScaleOut } from '../measure/scale-out.js';
import { spread, summarize } from '../stats.js';
import { fmt, fmtBytes, fmtSpread } from '../format.js';
import { log } from '../log.js';
import { sleep } from '../../util/sleep.js';

export const MEMORY_TARGET_RATIO = 1.3;

interface MemoryRun {
  n: number;
  run: number;
  fleet: MemoryFigures;
  raw: MemoryFigures | undefined;
  ratio: number;
  ratioAfterGc: number;
}

/**
 * RSS as-is, then after a full GC. With `gcFirst` (the baseline) a GC runs
 * first, so the baseline doesn't carry start-up garbage (PGlite's in-memory
 * initdb) that a later reading would have shed.
 */
async function settledRss(servers: readonly FleetServer[], gcFirst: boolean, signal: AbortSignal): Promise<{ rssBytes: number; rssAfterGcBytes: number }> {
  const rss = (): number => servers.reduce((n, s) => n + s.procStats().rssBytes, 0);
  if (gcFirst) {
    for (const s of servers) await s.collectGarbage();
    await sleep(SETTLE_MS, signal);
    signal.throwIfAborted();
  }
  const rssBytes = rss();
  for (const s of servers) await s.collectGarbage();
  return { rssBytes, rssAfterGcBytes: rss() };
}

/** RSS of the server(s) before and after N idle watchers open on one organization. */
async function fleetMemory(o: { servers: FleetServer[]; api: FleetApi; endpoints: Endpoint[]; n: number; socketsPerWorker: number; signal: AbortSignal }): Promise<MemoryFigures> {
  const { org, head } = await orgWithDevice(o.api, `idle-${o.n}`);
  const pool = await LoadPool.start(workersFor(o.n, o.socketsPerWorker));
  try {
    await sleep(SETTLE_MS, o.signal);
    o.signal.throwIfAborted();
    const idle = await settledRss(o.servers, true, o.signal);
    await pool.open(fleetWatchSpec(o.endpoints, org, head), o.n);
    await sleep(SETTLE_MS, o.signal);
    o.signal.throwIfAborted();
    const held = await settledRss(o.servers, false, o.signal);
    const c = await pool.counters();
    if (c.open !== o.n) throw new Error(`only ${c.open} of ${o.n} idle watchers stayed open`);
    await pool.closeAll({ forget: true });
    return memoryFigures(o.n, idle, held);
  } finally {
    await pool.stop();
  }
}

/** `idle-memory`: server RSS with 0 and N idle watchers → bytes per watcher, against raw-floor's bytes per held connection. */
export const idleMemory: Scenario = {
  name: 'idle-memory',
  summary: 'server RSS with 0, 10,000 (30,000 with --large) idle watchers → bytes per watcher vs raw-floor per connection',
  inDefault: true,
  timeLimitMs: (o) => o.runs * 70_000 + (o.large ? o.runs * 120_000 + 60_000 : 0),
  async run({ opts, signal }): Promise<ScenarioResult> {
    const n = 10_000;
    const runs: MemoryRun[] = [];
    const notes: string[] = [];
    let serverCommand = '';
    for (let run = 1; run <= opts.runs; run++) {
      log.info({ scenario: 'idle-memory', n, run }, 'run');
      // A fresh server per run: its baseline must not carry an earlier run's heap.
      const server = await FleetServer.start();
      serverCommand = server.commandLine;
      const api = server.api();
      let fleet: MemoryFigures;
      try {
        fleet = await fleetMemory({ servers: [server], api, endpoints: [endpointOf(server.url)], n, socketsPerWorker: opts.socketsPerWorker, signal });
      } finally {
        api.close();
        await server.stop();
      }
      const raw = (await rawFloorRun({ n, changes: 0, modes: [], memory: true, socketsPerWorker: opts.socketsPerWorker, signal })).memory;
      runs.push({
        n,
        run,
        fleet,
        raw,
        ratio: raw ? fleet.bytesPerConnection / raw.bytesPerConnection : Number.NaN,
        ratioAfterGc: raw ? fleet.bytesPerConnectionAfterGc / raw.bytesPerConnectionAfterGc : Number.NaN,
      });
    }
    let largeSettings: Record<string, unknown> | undefined;
    if (opts.large) {
      const large = 30_000;
      try {
        for (let run = 1; run <= opts.runs; run++) {
          log.info({ scenario: 'idle-memory', n: large, run, serverWorkers: 2 }, 'run');
          const env = await startScaleOut({ kind: 'workers', workers: 2 }, signal);
          largeSettings = env.settings;
          try {
            const fleet = await fleetMemory({ servers: env.servers, api: env.api, endpoints: env.endpoints, n: large, socketsPerWorker: opts.socketsPerWorker, signal });
            runs.push({ n: large, run, fleet, raw: undefined, ratio: Number.NaN, ratioAfterGc: Number.NaN });
          } finally {
            await env.stop();
          }
        }
      } catch (err) {
        if (!(err instanceof ScaleOutUnavailable)) throw err;
        notes.push(`N = 30,000 skipped: ${err.message}. One process can't hold 30,000 sockets (ulimit -n 20,000): it needs 'serve --workers 2' on PostgreSQL.`);
      }
    }
    const rows: (string | number)[][] = [];
    const summary: Record<string, unknown> = {};
    for (const size of [...new Set(runs.map((r) => r.n))]) {
      const of = runs.filter((r) => r.n === size);
      const f = summarize(of.map((r) => r.fleet));
      const raws = of.map((r) => r.raw).filter((x): x is MemoryFigures => x !== undefined);
      const raw = raws.length > 0 ? summarize(raws) : undefined;
      const ratio = spread(of.map((r) => r.ratio));
      const ratioGc = spread(of.map((r) => r.ratioAfterGc));
      summary[String(size)] = { fleet: f, raw, ratio, ratioAfterGc: ratioGc };
      rows.push([
        size.toLocaleString('en-US'),
        fmtBytes(f.rssIdleBytes.median),
        fmtBytes(f.rssHeldBytes.median),
        fmtSpread(f.bytesPerConnection, fmtBytes),
        fmtSpread(f.bytesPerConnectionAfterGc, fmtBytes),
        raw ? fmtSpread(raw.bytesPerConnection, fmtBytes) : '–',
        raw ? fmtSpread(raw.bytesPerConnectionAfterGc, fmtBytes) : '–',
        raw ? fmtSpread(ratio) : '–',
        raw ? fmtSpread(ratioGc) : '–',
      ]);
    }
    const targets: TargetResult[] = [];
    const at10k = runs.filter((r) => r.n === n && r.raw);
    if (at10k.length > 0) {
      const gc = spread(at10k.map((r) => r.ratioAfterGc));
      const asIs = spread(at10k.map((r) => r.ratio));
      targets.push({
        name: 'memory per idle watcher',
        target: `bytes per idle watcher (RSS after GC) within ${MEMORY_TARGET_RATIO}× raw-floor's per held connection, at 10,000`,
        measured: gc.median,
        limit: MEMORY_TARGET_RATIO,
        pass: gc.median <= MEMORY_TARGET_RATIO,
        detail: `after GC: min ${fmt(gc.min)}, max ${fmt(gc.max)}; RSS as-is: ratio ${fmt(asIs.median)} (min ${fmt(asIs.min)}, max ${fmt(asIs.max)})`,
      });
    }
    return {
      settings: {
        server: serverCommand,
        ...(largeSettings ? { large: largeSettings } : {}),
        watchers: 'idle: POST /events [{kind: device, gt_revision: head, at_tail: true}] on one organization; nothing changes',
        settleMs: SETTLE_MS,
        rss: 'VmRSS from /proc (whole process tree), read as-is and again after a full GC (SIGUSR2 → gc() with --expose-gc); the baseline is read after a GC, so start-up garbage is not in it',
        baseline: 'same server after start, organization created, before any watcher',
        rawFloor: 'raw-floor server (node:http, held responses), same N, same run',
        clientWorkers: `ceil(N / ${opts.socketsPerWorker})`,
      },
      tables: [
        {
          title: `idle-memory: median (min–max) over ${opts.runs} runs`,
          columns: ['N', 'RSS 0', 'RSS N', 'per watcher', 'per watcher (GC)', 'raw per conn', 'raw per conn (GC)', 'ratio', 'ratio (GC)'],
          rows,
        },
      ],
      runs,
      summary,
      targets,
      notes,
    };
  },
};
