import type { Scenario, ScenarioFlag, ScenarioResult, TargetResult } from '../scenario.js';
import { FleetServer } from '../server/fleet-server.js';
import { rawFloorRun } from '../measure/raw-floor-run.js';
import { fleetFanoutRun } from '../measure/fleet-fanout-run.js';
import { treeProbe } from '../measure/fleet-setup.js';
import { benchDataDir } from '../server/data-dir.js';
import { endpointOf, WATCH_SETUPS, type WatchSetup } from '../measure/watch-spec.js';
import { ScaleOutUnavailable, startScaleOut } from '../measure/scale-out.js';
import type { FanoutFigures } from '../measure/fanout.js';
import { spread, summarize } from '../stats.js';
import { fmt, fmtSpread } from '../format.js';
import { log } from '../log.js';

/** Enough that the process tree's CPU, read at one clock tick (10 ms), is within about 1% at 5,000 watchers. */
const CHANGES = 20;
/** The embedded PostgreSQL runs initdb at its first start, slowly on a busy machine. */
const START_TIMEOUT_MS = 120_000;
const STORAGES = ['embedded', 'memory'] as const;
type FanoutStorage = (typeof STORAGES)[number];
/** The limit of both fan-out targets: fleetplane ÷ raw floor, for "all received" and for CPU per delivery. */
export const FANOUT_TARGET_RATIO = 1.3;
/** The watcher counts the targets are stated for. */
export const FANOUT_TARGET_SIZES = [5_000, 10_000] as const;
/** Paired runs a target's median needs. */
export const FANOUT_TARGET_MIN_RUNS = 3;
const DEFAULT_SIZES = [...FANOUT_TARGET_SIZES];
const MAX_SIZE = 15_000;

function sizeList(v: string): number[] {
  return v.split(',').map((x) => Number(x.trim().replace(/_/g, '')));
}

function setupList(v: string): WatchSetup[] {
  const asked = v.split(',').map((x) => x.trim());
  return WATCH_SETUPS.filter((s) => asked.includes(s));
}

export const FANOUT_FLAGS: readonly ScenarioFlag[] = [
  {
    name: '--fanout-sizes',
    value: 'LIST',
    help: `watcher counts, e.g. 1000,5000,10000 (default ${DEFAULT_SIZES.join(',')}; the targets are at ${FANOUT_TARGET_SIZES.join(' and ')})`,
    check: (v) => (sizeList(v).every((n) => Number.isInteger(n) && n >= 10 && n <= MAX_SIZE) ? undefined : `a comma-separated list of integers from 10 to ${MAX_SIZE}`),
  },
  {
    name: '--fanout-setups',
    value: 'LIST',
    help: `how watchers open: tail (resume at the head, admin token), list-admin, list-org (initial list, admin / read organization token) (default ${WATCH_SETUPS.join(',')})`,
    check: (v) => (v.split(',').every((s) => (WATCH_SETUPS as readonly string[]).includes(s.trim())) ? undefined : `a comma-separated list of ${WATCH_SETUPS.join(', ')}`),
  },
  {
    name: '--fanout-storage',
    value: 'NAME',
    help: 'embedded (the default storage, as `npm start` runs: embedded PostgreSQL in a temporary directory) or memory (`serve --memory`: PGlite inside the server process) (default embedded)',
    check: (v) => ((STORAGES as readonly string[]).includes(v) ? undefined : `one of ${STORAGES.join(', ')}`),
  },
];

function fanoutOptions(flags: Record<string, string>): { sizes: number[]; setups: WatchSetup[]; storage: FanoutStorage } {
  const sizes = flags['--fanout-sizes'];
  const setups = flags['--fanout-setups'];
  return {
    sizes: sizes === undefined ? DEFAULT_SIZES : [...new Set(sizeList(sizes))],
    setups: setups === undefined ? [...WATCH_SETUPS] : setupList(setups),
    storage: flags['--fanout-storage'] === 'memory' ? 'memory' : 'embedded',
  };
}

/** Time one paired run (fleetplane and raw floor) may take at N watchers, in ms, generously. */
function pairLimitMs(n: number): number {
  return 30_000 + n * 4;
}

interface FanoutRun {
  n: number;
  run: number;
  fleet: FanoutFigures;
  raw: FanoutFigures | undefined;
  /** fleetplane "all received" ÷ raw-floor "all received", same N, same run. */
  ratio: number;
}

interface SetupRun extends FanoutRun {
  setup: WatchSetup;
  /** Whether the raw floor ran before fleetplane in this pair. */
  rawFirst: boolean;
}

/** fleetplane CPU per delivery ÷ raw-floor's, same N, same run (NaN without a raw floor). */
function cpuRatio(r: FanoutRun): number {
  return r.raw ? r.fleet.cpuUsPerDelivery / r.raw.cpuUsPerDelivery : Number.NaN;
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
      raw ? fmtSpread(spread(of.map(cpuRatio))) : '–',
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
  'CPU ratio',
  'fill q/change',
];

/** The two targets of one setup at one N: "all received" and CPU per delivery, each ≤ FANOUT_TARGET_RATIO × raw floor (median of the paired runs). */
function setupTargets(setup: WatchSetup, n: number, runs: readonly SetupRun[]): TargetResult[] {
  const of = runs.filter((r) => r.setup === setup && r.n === n && r.raw !== undefined);
  if (of.length === 0) return [];
  const enough = of.length >= FANOUT_TARGET_MIN_RUNS;
  const short = enough ? '' : `; FAIL: fewer than ${FANOUT_TARGET_MIN_RUNS} paired runs (use --runs ${FANOUT_TARGET_MIN_RUNS} or more)`;
  const size = n.toLocaleString('en-US');
  const time = spread(of.map((r) => r.ratio));
  const cpu = spread(of.map(cpuRatio));
  return [
    {
      name: `fan-out to ${size}, ${setup}`,
      target: `"all received" within ${FANOUT_TARGET_RATIO}× raw-floor at ${size} watchers (${setup})`,
      measured: time.median,
      limit: FANOUT_TARGET_RATIO,
      pass: enough && time.median <= FANOUT_TARGET_RATIO,
      detail: `ratio median over ${of.length} paired runs (min ${fmt(time.min)}, max ${fmt(time.max)})${short}`,
    },
    {
      name: `CPU per delivery at ${size}, ${setup}`,
      target: `server CPU per delivery within ${FANOUT_TARGET_RATIO}× raw-floor's at ${size} watchers (${setup})`,
      measured: cpu.median,
      limit: FANOUT_TARGET_RATIO,
      pass: enough && cpu.median <= FANOUT_TARGET_RATIO,
      detail: `ratio median over ${of.length} paired runs (min ${fmt(cpu.min)}, max ${fmt(cpu.max)}); µs per delivery ${fmt(spread(of.map((r) => r.fleet.cpuUsPerDelivery)).median)} against ${fmt(spread(of.map((r) => r.raw?.cpuUsPerDelivery ?? Number.NaN)).median)}${short}`,
    },
  ];
}

const SETUP_WORDS: Record<WatchSetup, string> = {
  tail: 'POST /events [{kind: device, gt_revision: head, at_tail: true}] with the admin token (agents resuming at the head)',
  'list-admin': 'POST /events [{kind: device, gt_revision: 0, at_tail: false}] with the admin token (an initial list)',
  'list-org': 'POST /events [{kind: device, gt_revision: 0, at_tail: false}] with an organization token of role read (an initial list)',
};

/**
 * `fanout`: N watchers on one organization, K changes, commit→receive
 * latency, against the raw floor at the same N; for each way of opening the
 * watchers (WATCH_SETUPS), each paired with its own raw-floor run in the same round.
 */
export const fanout: Scenario = {
  name: 'fanout',
  summary: 'N watchers (5,000; 10,000; 30,000 with --large) opened at the tail or from an initial list, K changes: latency and CPU per delivery vs raw-floor',
  inDefault: true,
  flags: FANOUT_FLAGS,
  // Its ratios sit near their 1.3× limits and a run swings by ±0.2 with the machine's other load (bench/HISTORY.md).
  defaultRuns: 5,
  timeLimitMs: (o) => {
    const f = fanoutOptions(o.flags);
    const round = f.setups.length * f.sizes.reduce((ms, n) => ms + pairLimitMs(n), 0);
    return 60_000 + START_TIMEOUT_MS + o.runs * round + (o.large ? o.runs * 150_000 + 60_000 : 0);
  },
  async run({ opts, signal }): Promise<ScenarioResult> {
    const { sizes, setups, storage } = fanoutOptions(opts.flags);
    const dir = storage === 'embedded' ? benchDataDir('fanout') : undefined;
    let server: FleetServer;
    try {
      server = await FleetServer.start(dir ? { dataDir: dir.path, startTimeoutMs: START_TIMEOUT_MS } : {});
    } catch (err) {
      dir?.dispose();
      throw err;
    }
    const api = server.api();
    const runs: SetupRun[] = [];
    const large: FanoutRun[] = [];
    const notes: string[] = [];
    try {
      for (let run = 1; run <= opts.runs; run++) {
        for (const n of sizes) {
          // The setups take turns going first, so none always runs on a warmer (or more tired) machine.
          for (let k = 0; k < setups.length; k++) {
            const si = (k + run - 1) % setups.length;
            const setup = setups[si] ?? 'tail';
            // The raw floor goes first in every other pair, for the same reason.
            const rawFirst = (run + si) % 2 === 1;
            log.info({ scenario: 'fanout', n, run, setup, rawFirst }, 'run');
            let raw: FanoutFigures | undefined;
            const measureRaw = async (): Promise<void> => {
              raw = (await rawFloorRun({ n, changes: CHANGES, modes: ['socket'], memory: false, socketsPerWorker: opts.socketsPerWorker, signal })).fanout.socket;
            };
            if (rawFirst) await measureRaw();
            const fleet = await fleetFanoutRun({
              api,
              probe: treeProbe(server, api),
              endpoints: [endpointOf(server.url)],
              n,
              changes: CHANGES,
              socketsPerWorker: opts.socketsPerWorker,
              signal,
              label: `fanout-${setup}-${n}-${run}`,
              setup,
            });
            if (!rawFirst) await measureRaw();
            runs.push({ setup, rawFirst, n, run, fleet, raw, ratio: raw ? fleet.allReceivedMs / raw.allReceivedMs : Number.NaN });
          }
        }
      }
    } finally {
      api.close();
      await server.stop();
      dir?.dispose();
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
            large.push({ n, run, fleet, raw: undefined, ratio: Number.NaN });
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
    for (const n of FANOUT_TARGET_SIZES) for (const setup of setups) targets.push(...setupTargets(setup, n, runs));
    const untargeted = FANOUT_TARGET_SIZES.filter((n) => !sizes.includes(n));
    if (untargeted.length > 0) notes.push(`the ratio targets are stated at ${FANOUT_TARGET_SIZES.join(' and ')} watchers; not measured here: ${untargeted.join(', ')}`);
    const all: FanoutRun[] = [...runs, ...large];
    const fills = all.map((r) => r.fleet.fillQueriesPerChange).filter((x) => !Number.isNaN(x));
    if (fills.length > 0) {
      const worst = Math.max(...fills.map((x) => Math.abs(x - 1)));
      targets.push({
        name: 'one fill query per change',
        target: 'exactly 1 tail-cache fill query per change, whatever N',
        measured: Math.max(...fills),
        limit: 1,
        pass: worst === 0,
        detail: `per-run values ${[...new Set(fills.map((x) => fmt(x)))].join(', ')} over N = ${[...new Set(all.map((r) => r.n))].join(', ')}`,
      });
    }
    const title = (what: string): string => `fanout, ${what}: ${CHANGES} changes per run; median (min–max) over ${opts.runs} runs; ms from the write`;
    return {
      settings: {
        server: server.commandLine,
        storage: storage === 'embedded' ? 'embedded PostgreSQL in a temporary directory (the default storage)' : 'PGlite in the server process (--memory)',
        cpu: "the server's process tree from /proc (the server and its embedded PostgreSQL, with the backends that exited), read after a /metrics scrape and before the next, so no scrape is counted; raw floor: its process's own CPU",
        ...(largeSettings ? { large: largeSettings } : {}),
        sizes: opts.large ? [...sizes, 30_000] : sizes,
        setups: Object.fromEntries(setups.map((s) => [s, SETUP_WORDS[s]])),
        changesPerRun: CHANGES,
        warmupChanges: 2,
        gapBetweenChangesMs: 50,
        change: 'PATCH of one device (hostname), one at a time; the next after every watcher has the previous one',
        watchers: 'held on raw HTTP/1.1 sockets; a fresh organization with one device per run',
        pairing: 'every (setup, N, run) has its own raw-floor run right before or after it (alternating); the setups take turns going first',
        latencyFrom: 'the moment the PATCH request was sent (includes the write round trip and commit); raw-floor: the moment its trigger was sent',
        clientWorkers: `ceil(N / ${opts.socketsPerWorker})`,
        rawFloorMode: 'socket (pre-framed chunk written to each socket)',
      },
      tables: [
        ...setups.map((s) => ({ title: title(s), columns: FANOUT_COLUMNS, rows: fanoutRows(runs.filter((r) => r.setup === s)) })),
        ...(large.length > 0 ? [{ title: title('30,000 on serve --workers 2, tail'), columns: FANOUT_COLUMNS, rows: fanoutRows(large) }] : []),
      ],
      runs: all,
      summary: Object.fromEntries(
        setups.map((s) => [
          s,
          Object.fromEntries(
            sizes.map((n) => {
              const of = runs.filter((r) => r.setup === s && r.n === n);
              const raws = of.map((r) => r.raw).filter((x): x is FanoutFigures => x !== undefined);
              return [String(n), { fleet: summarize(of.map((r) => r.fleet)), raw: raws.length ? summarize(raws) : undefined, ratio: spread(of.map((r) => r.ratio)), cpuRatio: spread(of.map(cpuRatio)) }];
            }),
          ),
        ]),
      ),
      targets,
      notes,
    };
  },
};
