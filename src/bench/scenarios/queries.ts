import type { Scenario, ScenarioResult, TargetResult } from '../scenario.js';
import { FleetServer } from '../server/fleet-server.js';
import { fleetFanoutRun } from '../measure/fleet-fanout-run.js';
import { serverProbe } from '../measure/fleet-setup.js';
import { endpointOf } from '../measure/watch-spec.js';
import type { FanoutFigures } from '../measure/fanout.js';
import { spread, summarize } from '../stats.js';
import { fmt, fmtSpread } from '../format.js';
import { log } from '../log.js';

/** Changes per run with the cache, and without it (where each costs N queries). */
const CHANGES: Record<number, number> = { 1024: 10, 0: 5 };
const SIZES = [10, 1_000];
const CACHES = [1024, 0];

interface QueriesRun {
  tailCacheSize: number;
  n: number;
  run: number;
  figures: FanoutFigures;
  /** Everything the write path and background loops queried: db − fill − catch-up. */
  otherQueriesPerChange: number;
}

/** `queries`: database queries per change with N watchers, with the tail cache and without it. */
export const queries: Scenario = {
  name: 'queries',
  summary: 'db queries per change with N watchers (10; 1,000), with the tail cache and with --tail-cache-size 0',
  inDefault: true,
  timeLimitMs: (o) => o.runs * 60_000 + 30_000,
  async run({ opts, signal }): Promise<ScenarioResult> {
    const runs: QueriesRun[] = [];
    const servers: Record<string, string> = {};
    for (const cache of CACHES) {
      const server = await FleetServer.start({ flags: ['--tail-cache-size', String(cache)] });
      servers[String(cache)] = server.commandLine;
      const api = server.api();
      try {
        for (let run = 1; run <= opts.runs; run++) {
          for (const n of SIZES) {
            log.info({ scenario: 'queries', tailCacheSize: cache, n, run }, 'run');
            const figures = await fleetFanoutRun({
              api,
              probe: serverProbe(server, api),
              endpoints: [endpointOf(server.url)],
              n,
              changes: CHANGES[cache] ?? 5,
              socketsPerWorker: opts.socketsPerWorker,
              signal,
              label: `queries-${cache}-${n}-${run}`,
            });
            runs.push({
              tailCacheSize: cache,
              n,
              run,
              figures,
              otherQueriesPerChange: figures.dbQueriesPerChange - figures.fillQueriesPerChange - figures.catchUpQueriesPerChange,
            });
          }
        }
      } finally {
        api.close();
        await server.stop();
      }
    }
    const rows: (string | number)[][] = [];
    const summary: Record<string, unknown> = {};
    for (const cache of CACHES) {
      for (const n of SIZES) {
        const of = runs.filter((r) => r.tailCacheSize === cache && r.n === n);
        const f = summarize(of.map((r) => r.figures));
        const other = spread(of.map((r) => r.otherQueriesPerChange));
        summary[`cache=${cache},n=${n}`] = { ...f, otherQueriesPerChange: other };
        rows.push([
          cache === 0 ? '0 (off)' : String(cache),
          n.toLocaleString('en-US'),
          fmtSpread(f.dbQueriesPerChange),
          fmtSpread(f.fillQueriesPerChange),
          fmtSpread(f.catchUpQueriesPerChange),
          fmtSpread(other),
          fmtSpread(f.allReceivedMs),
          fmtSpread(f.cpuMsPerChange),
        ]);
      }
    }
    const targets: TargetResult[] = [];
    const cached = runs.filter((r) => r.tailCacheSize !== 0);
    const fills = cached.map((r) => r.figures.fillQueriesPerChange);
    const catchUps = cached.map((r) => r.figures.catchUpQueriesPerChange);
    targets.push({
      name: 'one fill query per change',
      target: 'exactly 1 watch query per change with the tail cache (fill 1, catch-up 0), whatever N',
      measured: Math.max(...fills.map((x, i) => x + (catchUps[i] ?? 0))),
      limit: 1,
      pass: fills.every((x) => x === 1) && catchUps.every((x) => x === 0),
      detail: `fill per change ${[...new Set(fills.map((x) => fmt(x)))].join(', ')}, catch-up ${[...new Set(catchUps.map((x) => fmt(x)))].join(', ')} over N = ${SIZES.join(', ')}`,
    });
    const bigN = SIZES[SIZES.length - 1] ?? 0;
    const watchQ = (cache: number): number =>
      spread(runs.filter((r) => r.tailCacheSize === cache && r.n === bigN).map((r) => r.figures.fillQueriesPerChange + r.figures.catchUpQueriesPerChange)).median;
    const notes = [
      `at N = ${bigN.toLocaleString('en-US')}, watch-path queries per change: ${fmt(watchQ(1024))} with the tail cache, ${fmt(watchQ(0))} without (${fmt(watchQ(0) / watchQ(1024))}× more).`,
      '"other" is the write itself (transaction statements) plus the periodic safety check and any other background query during the run.',
    ];
    return {
      settings: {
        servers,
        sizes: SIZES,
        tailCacheSizes: CACHES,
        changesPerRun: CHANGES,
        warmupChanges: 2,
        change: 'PATCH of one device, one at a time; the next after every watcher has the previous one',
        counters: 'deltas of fleetplane_db_queries_total, fleetplane_watch_fill_queries_total, fleetplane_watch_catchup_queries_total from /metrics',
      },
      tables: [
        {
          title: `queries: per change (${CHANGES[1024]} changes per run with the cache, ${CHANGES[0]} without), median (min–max) over ${opts.runs} runs`,
          columns: ['tail cache', 'N', 'db queries', 'fill', 'catch-up', 'other (write, background)', 'all received ms', 'CPU ms/change'],
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
