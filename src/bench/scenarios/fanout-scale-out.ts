import type { Scenario, ScenarioResult } from '../scenario.js';
import { skipped } from '../scenario.js';
import { fleetFanoutRun } from '../measure/fleet-fanout-run.js';
import { ScaleOutUnavailable, startScaleOut, type ScaleOutMode } from '../measure/scale-out.js';
import type { FanoutFigures } from '../measure/fanout.js';
import { spread } from '../stats.js';
import { log } from '../log.js';
import { FANOUT_COLUMNS, fanoutRows } from './fanout.js';

const CHANGES = 10;

function describe(mode: ScaleOutMode): string {
  return mode.kind === 'workers' ? `one server, --workers ${mode.workers}` : `${mode.replicas} replicas on one PostgreSQL (--bus postgres)`;
}

/**
 * Fan-out on the scale-out deployments (PostgreSQL): N watchers spread over
 * the server's processes or replicas, changes written through the first.
 * Skips, saying why, until the server supports the mode. (No raw floor side
 * by side, to keep the default set short: `fanout` measures it at 10,000.)
 */
function scaleOutScenario(name: string, mode: ScaleOutMode, summary: string): Scenario {
  return {
    name,
    summary,
    inDefault: true,
    timeLimitMs: (o) => 60_000 + o.runs * (o.large ? 150_000 : 60_000),
    async run({ opts, signal }): Promise<ScenarioResult> {
      const sizes = opts.large ? [10_000, 30_000] : [10_000];
      let env;
      try {
        env = await startScaleOut(mode, signal);
      } catch (err) {
        if (err instanceof ScaleOutUnavailable) return skipped(err.message, { mode: describe(mode), sizes });
        throw err;
      }
      const runs: { n: number; run: number; fleet: FanoutFigures; raw: FanoutFigures | undefined; ratio: number }[] = [];
      try {
        for (let run = 1; run <= opts.runs; run++) {
          for (const n of sizes) {
            log.info({ scenario: name, n, run }, 'run');
            const fleet = await fleetFanoutRun({ ...env, n, changes: CHANGES, socketsPerWorker: opts.socketsPerWorker, signal, label: `${name}-${n}-${run}` });
            runs.push({ n, run, fleet, raw: undefined, ratio: Number.NaN });
          }
        }
      } finally {
        await env.stop();
      }
      return {
        settings: {
          mode: describe(mode),
          ...env.settings,
          sizes,
          changesPerRun: CHANGES,
          watchers: 'spread evenly over the servers\' endpoints (replicas) or the one port (workers); changes written through the first server',
          cpu: 'summed over every server process from /proc (fleetplane processes only, not PostgreSQL)',
          clientWorkers: `ceil(N / ${opts.socketsPerWorker})`,
        },
        tables: [{ title: `${name}: ${describe(mode)}; ${CHANGES} changes per run; median (min–max) over ${opts.runs} runs`, columns: FANOUT_COLUMNS, rows: fanoutRows(runs) }],
        runs,
        summary: Object.fromEntries(sizes.map((n) => [String(n), { ratio: spread(runs.filter((r) => r.n === n).map((r) => r.ratio)) }])),
        targets: [],
        notes: [
          'fill queries per change are not shown: replicas have no single /metrics to read them from (workers do, summed by the primary, but both modes are shown alike).',
          'for the raw floor at 10,000 see the fanout scenario of the same invocation.',
        ],
      };
    },
  };
}

export const fanoutWorkers = scaleOutScenario(
  'fanout-workers',
  { kind: 'workers', workers: 2 },
  'fanout on PostgreSQL with `serve --workers 2` (10,000; 30,000 with --large); skips until the server supports --workers',
);

export const fanoutReplicas = scaleOutScenario(
  'fanout-replicas',
  { kind: 'replicas', replicas: 3 },
  'fanout across 3 replicas on one PostgreSQL (10,000; 30,000 with --large); skips until replicas relay change signals',
);
