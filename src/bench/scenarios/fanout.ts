import type { Scenario, ScenarioResult, TargetResult } from '../scenario.js';
import { FleetServer } from '../server/fleet-server.js';
import { rawFloorRun } from '../measure/raw-floor-run.js';
import { fleetFanoutRun } from '../measure/fleet-fanout-run.js';
import { serverProbe } from '../measure/fleet-setup.js';
import { endpointOf } from '../measure/watch-spec.js';
import { ScaleOutUnavailable, startScaleOut } from '../measure/scale-out.js';
import type { FanoutFigures } from '../measure/fanout.js';
import { spread, summarize } from '../stats.js';
import { fmt, fmtSpread } from '../format.js';
import { log } from '../log.js';

const CHANGES = 10;
export const FANOUT_TARGET_RATIO = 2;

interface FanoutRun {
  n: number;
  run: number;
  fleet: FanoutFigures;
  raw: FanoutFigures | undefined;
  /** fleetplane "all received" ÷ raw-floor "all received", same N, same run. */
  ratio: number;
}

/** Table rows for fan-out runs grouped by N. */
export function fanoutRows(runs: readonly FanoutRun[]): (string | number)[][] {
  const rows: (string | number)[][] = [];
  for (const n of [...new Set(runs.map((r) => r.n))]) {
    const of = runs.filter((r) => r.n === n);
    const f = summarize(of.map((r) => r.fleet));
    const raws = of.map((r) => r.raw).filter((x): x is FanoutFigures => x !== undefined);
    const raw = raws.length > 0 ? summarize(raws) : undefined;
    rows.push([
      n.toLocaleString('en-US'),
      fmtSpread(f.allReceivedMs),
      raw ? fmtSpread(raw.allReceivedMs) : '–',
      raw ? fmtSpread(spread(of.map((r) => r.ratio))) : '–',
      fmtSpread(f.p50Ms),
      fmtSpread(f.p99Ms),
      fmtSpread(f.maxMs),
      fmt(f.writeMs.median),
      `${fmt(f.serverFanoutMs.median)} / ${raw ? fmt(raw.serverFanoutMs.median) : '–'}`,
      fmtSpread(f.cpuMsPerChange),
      `${fmt(f.cpuUsPerDelivery.median)} / ${raw ? fmt(raw.cpuUsPerDelivery.median) : '–'}`,
      fmtSpread(f.fillQueriesPerChange),
    ]);
  }
  return rows;
}

export const FANOUT_COLUMNS = [
  'N',
  'all received',
  'raw-floor',
  'ratio',
  'p50',
  'p99',
  'max',
  'write',
  'server fan-out / raw loop',
  'CPU ms/change',
  'CPU µs/delivery (fp / raw)',
  'fill q/change',
];

/** `fanout`: N watchers on one organization, K changes, commit→receive latency, against raw-floor at the same N. */
export const fanout: Scenario = {
  name: 'fanout',
  summary: 'N watchers (1,000; 10,000; 30,000 with --large), K changes: latency p50/p99/max/all received vs raw-floor, CPU per change',
  inDefault: true,
  timeLimitMs: (o) => o.runs * 100_000 + (o.large ? o.runs * 150_000 + 60_000 : 0),
  async run({ opts, signal }): Promise<ScenarioResult> {
    const sizes = [1_000, 10_000];
    const server = await FleetServer.start();
    const api = server.api();
    const runs: FanoutRun[] = [];
    const notes: string[] = [];
    try {
      for (let run = 1; run <= opts.runs; run++) {
        for (const n of sizes) {
          log.info({ scenario: 'fanout', n, run }, 'run');
          // Alternate which goes first, so neither always runs on a warmer (or more tired) machine.
          let raw: FanoutFigures | undefined;
          const measureRaw = async (): Promise<void> => {
            raw = (await rawFloorRun({ n, changes: CHANGES, modes: ['socket'], memory: false, socketsPerWorker: opts.socketsPerWorker, signal })).fanout.socket;
          };
          if (run % 2 === 1) await measureRaw();
          const fleet = await fleetFanoutRun({
            api,
            probe: serverProbe(server, api),
            endpoints: [endpointOf(server.url)],
            n,
            changes: CHANGES,
            socketsPerWorker: opts.socketsPerWorker,
            signal,
            label: `fanout-${n}-${run}`,
          });
          if (run % 2 === 0) await measureRaw();
          runs.push({ n, run, fleet, raw, ratio: raw ? fleet.allReceivedMs / raw.allReceivedMs : Number.NaN });
        }
      }
    } finally {
      api.close();
      await server.stop();
    }
    let largeSettings: Record<string, unknown> | undefined;
    if (opts.large) {
      const n = 30_000;
      try {
        const env = await startScaleOut({ kind: 'workers', workers: 2 }, signal);
        largeSettings = env.settings;
        try {
          for (let run = 1; run <= opts.runs; run++) {
            log.info({ scenario: 'fanout', n, run, serverWorkers: 2 }, 'run');
            const fleet = await fleetFanoutRun({ ...env, n, changes: CHANGES, socketsPerWorker: opts.socketsPerWorker, signal, label: `fanout-${n}-${run}` });
            runs.push({ n, run, fleet, raw: undefined, ratio: Number.NaN });
          }
        } finally {
          await env.stop();
        }
      } catch (err) {
        if (!(err instanceof ScaleOutUnavailable)) throw err;
        notes.push(`N = 30,000 skipped: ${err.message}. One process can't hold 30,000 sockets (ulimit -n 20,000): it needs 'serve --workers 2' on PostgreSQL.`);
      }
    }
    const targets: TargetResult[] = [];
    const at10k = runs.filter((r) => r.n === 10_000);
    if (at10k.length > 0) {
      const ratio = spread(at10k.map((r) => r.ratio));
      targets.push({
        name: 'fan-out to 10,000',
        target: `"all received" within ${FANOUT_TARGET_RATIO}× raw-floor at 10,000 watchers`,
        measured: ratio.median,
        limit: FANOUT_TARGET_RATIO,
        pass: ratio.median <= FANOUT_TARGET_RATIO,
        detail: `ratio median over ${at10k.length} runs (min ${fmt(ratio.min)}, max ${fmt(ratio.max)})`,
      });
    }
    const fills = runs.map((r) => r.fleet.fillQueriesPerChange).filter((x) => !Number.isNaN(x));
    if (fills.length > 0) {
      const worst = Math.max(...fills.map((x) => Math.abs(x - 1)));
      targets.push({
        name: 'one fill query per change',
        target: 'exactly 1 tail-cache fill query per change, whatever N',
        measured: Math.max(...fills),
        limit: 1,
        pass: worst === 0,
        detail: `per-run values ${[...new Set(fills.map((x) => fmt(x)))].join(', ')} over N = ${[...new Set(runs.map((r) => r.n))].join(', ')}`,
      });
    }
    return {
      settings: {
        server: server.commandLine,
        ...(largeSettings ? { large: largeSettings } : {}),
        sizes: opts.large ? [...sizes, 30_000] : sizes,
        changesPerRun: CHANGES,
        warmupChanges: 2,
        gapBetweenChangesMs: 50,
        change: 'PATCH of one device (hostname), one at a time; the next after every watcher has the previous one',
        watchers: 'POST /events [{kind: device, gt_revision: head, at_tail: true}] (agents resuming), held on raw HTTP/1.1 sockets',
        latencyFrom: 'the moment the PATCH request was sent (includes the write round trip and commit); raw-floor: the moment its trigger was sent',
        clientWorkers: `ceil(N / ${opts.socketsPerWorker})`,
        rawFloorMode: 'socket (pre-framed chunk written to each socket)',
      },
      tables: [
        {
          title: `fanout: ${CHANGES} changes per run; median (min–max) over ${opts.runs} runs; ms from the write`,
          columns: FANOUT_COLUMNS,
          rows: fanoutRows(runs),
        },
      ],
      runs,
      summary: Object.fromEntries(
        [...new Set(runs.map((r) => r.n))].map((n) => {
          const of = runs.filter((r) => r.n === n);
          const raws = of.map((r) => r.raw).filter((x): x is FanoutFigures => x !== undefined);
          return [String(n), { fleet: summarize(of.map((r) => r.fleet)), raw: raws.length ? summarize(raws) : undefined, ratio: spread(of.map((r) => r.ratio)) }];
        }),
      ),
      targets,
      notes,
    };
  },
};
