import type { Scenario, ScenarioResult, TargetResult } from '../scenario.js';
import { changeLineBytes, type BenchDevice, type FleetApi } from '../http-api.js';
import { LoadPool, workersFor } from '../load/pool.js';
import { seededOrg } from '../measure/seeded-org.js';
import { endpointOf, fleetWatchSpec } from '../measure/watch-spec.js';
import { maxOf, median, percentile, spread, summarize } from '../stats.js';
import { fmt, fmtBytes, fmtSpread } from '../format.js';
import { promValue } from '../prom-text.js';
import { log } from '../log.js';
import { sleep } from '../../util/sleep.js';
import { paths } from '../../protocol/index.js';

const DEVICES = 1_000;
/** Changes missed while the org's tail cache stays alive (another watcher stays connected): served from the ring. */
const RING_CASES = [10, 100, 1_000];
/** Changes missed while nobody watched the org on this server: resumed from the database. */
const DB_CASES = [100];
/** Bytes per watcher may differ from the exact delta by this much (bookmarks, rounding). */
const PROPORTIONAL_TOLERANCE = 0.05;

interface CatchUpFigures {
  missed: number;
  expectedBytes: number;
  bodyBytesPerWatcher: number;
  maxBodyBytesPerWatcher: number;
  wireBytesPerWatcher: number;
  /** Median body bytes ÷ the exact bytes of the missed changes. */
  ratioToDelta: number;
  bytesPerMissedChange: number;
  allAtHeadMs: number;
  p50AtHeadMs: number;
  catchUpQueries: number;
}

interface CatchUpRun {
  run: number;
  path: 'ring' | 'database';
  figures: CatchUpFigures;
}

/** K changes to K distinct devices (4 at a time); returns the devices' final values and the head. */
async function makeChanges(api: FleetApi, org: string, devices: BenchDevice[], k: number, offset: number, label: string): Promise<{ changed: BenchDevice[]; head: number }> {
  const changed: BenchDevice[] = new Array<BenchDevice>(k);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= k) return;
      const d = devices[(offset + i) % devices.length];
      if (!d) return;
      changed[i] = (await api.patchDevice(org, d.id, { hostname: `${label}-${i}` })).device;
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return { changed, head: Math.max(...changed.map((d) => d.revision)) };
}

async function catchUpQueries(api: FleetApi): Promise<number> {
  return promValue(await api.metricsText(), 'fleetplane_watch_catchup_queries_total');
}

/** `catch-up`: N watchers disconnect, K changes, all resume at once from their own revision. */
export const catchUp: Scenario = {
  name: 'catch-up',
  summary: 'N watchers (1,000; 10,000 with --large) disconnect, K changes, all resume at once: bytes per watcher vs the delta, time to head',
  inDefault: true,
  timeLimitMs: (o) => 240_000 + o.runs * (o.large ? 150_000 : 60_000),
  async run({ opts, signal }): Promise<ScenarioResult> {
    const n = opts.large ? 10_000 : 1_000;
    const { server, api, org, devices, seedSeconds } = await seededOrg(DEVICES);
    const endpoints = [endpointOf(server.url)];
    const fullList = await api.request('GET', paths.devices(org));
    const fullListBytes = Buffer.byteLength(fullList.body);
    const fullWatchListBytes = devices.reduce((s, d) => s + changeLineBytes(d), 0);
    const runs: CatchUpRun[] = [];
    const keeper = await LoadPool.start(1);
    const pool = await LoadPool.start(workersFor(n, opts.socketsPerWorker));
    let offset = 0;
    try {
      for (let run = 1; run <= opts.runs; run++) {
        const head = await api.headRevision(org);
        await keeper.open(fleetWatchSpec(endpoints, org, head), 1);
        await pool.open(fleetWatchSpec(endpoints, org, head), n);
        const cases: { path: 'ring' | 'database'; k: number }[] = [
          ...RING_CASES.map((k) => ({ path: 'ring' as const, k })),
          ...DB_CASES.map((k) => ({ path: 'database' as const, k })),
        ];
        for (const c of cases) {
          log.info({ scenario: 'catch-up', n, run, path: c.path, missed: c.k }, 'case');
          await pool.closeAll();
          if (c.path === 'database') {
            await keeper.closeAll();
            // The server drops the org's tail cache once its last watcher is gone.
            await sleep(500, signal);
            signal.throwIfAborted();
          }
          const { changed, head: target } = await makeChanges(api, org, devices, c.k, offset, `catchup-${run}-${c.path}-${c.k}`);
          offset += c.k;
          const expectedBytes = changed.reduce((s, d) => s + changeLineBytes(d), 0);
          const q0 = await catchUpQueries(api);
          const r = await pool.resume(target, 60_000);
          const q1 = await catchUpQueries(api);
          if (r.failed > 0) throw new Error(`${r.failed} watchers failed to resume: ${r.errors.join('; ')}`);
          const reached = r.reachedAt.map((t) => t - r.startedAt);
          const missing = reached.filter((t) => Number.isNaN(t)).length;
          if (missing > 0) throw new Error(`${missing} of ${n} watchers did not reach revision ${target} within 60 s`);
          const body = median(r.bodyBytes);
          runs.push({
            run,
            path: c.path,
            figures: {
              missed: c.k,
              expectedBytes,
              bodyBytesPerWatcher: body,
              maxBodyBytesPerWatcher: maxOf(r.bodyBytes),
              wireBytesPerWatcher: median(r.wireBytes),
              ratioToDelta: body / expectedBytes,
              bytesPerMissedChange: body / c.k,
              allAtHeadMs: maxOf(reached),
              p50AtHeadMs: percentile(reached, 50),
              catchUpQueries: q1 - q0,
            },
          });
        }
        await pool.closeAll({ forget: true });
        await keeper.closeAll({ forget: true });
      }
    } finally {
      await pool.stop();
      await keeper.stop();
    }
    const rows: (string | number)[][] = [];
    const summary: Record<string, unknown> = {};
    const keys = [...new Set(runs.map((r) => `${r.path}:${r.figures.missed}`))];
    for (const key of keys) {
      const of = runs.filter((r) => `${r.path}:${r.figures.missed}` === key);
      const f = summarize(of.map((r) => r.figures));
      summary[key] = f;
      rows.push([
        of[0]?.path ?? '',
        fmt(f.missed.median),
        fmtBytes(f.expectedBytes.median),
        fmtSpread(f.bodyBytesPerWatcher, fmtBytes),
        fmtSpread(f.ratioToDelta),
        fmt(f.bytesPerMissedChange.median),
        fmtBytes(f.wireBytesPerWatcher.median),
        fmtSpread(f.allAtHeadMs),
        fmt(f.p50AtHeadMs.median),
        fmt(f.catchUpQueries.median),
      ]);
    }
    const ratios = runs.map((r) => r.figures.ratioToDelta);
    const worst = Math.max(...ratios.map((x) => Math.abs(x - 1)));
    const targets: TargetResult[] = [
      {
        name: 'catch-up bytes proportional to changes missed',
        target: `bytes per resuming watcher = the bytes of the changes it missed (±${PROPORTIONAL_TOLERANCE * 100}%), not the full list`,
        measured: ratios[ratios.findIndex((x) => Math.abs(x - 1) === worst)] ?? Number.NaN,
        limit: 1 + PROPORTIONAL_TOLERANCE,
        pass: worst <= PROPORTIONAL_TOLERANCE,
        detail: `bytes ÷ delta over every case and run: ${fmt(Math.min(...ratios))}–${fmt(Math.max(...ratios))}; full list is ${fmtBytes(fullWatchListBytes)} as watch events (${fmtBytes(fullListBytes)} as GET)`,
      },
    ];
    return {
      settings: {
        server: server.commandLine,
        watchers: n,
        devices: DEVICES,
        seeding: `${DEVICES} devices created through the API in ${Math.round(seedSeconds)} s (shared with other scenarios of this invocation)`,
        ringCases: RING_CASES,
        databaseCases: DB_CASES,
        changes: 'K PATCHes of K distinct devices, 4 at a time, while every watcher is disconnected (TCP reset)',
        ring: 'one other watcher stays connected, so the organization\'s tail cache (1,024 events) lives on and serves the resume',
        database: 'no watcher stays: the server drops the tail cache and resumes read pages from the database',
        resume: 'all at once (≤ 500 connects in flight per load worker): POST /events [{kind: device, gt_revision: <own last revision>, at_tail: true}]',
        expectedBytes: 'exact NDJSON bytes of the missed changes\' events, from the PATCH responses',
        fullListBytes: { watchEvents: fullWatchListBytes, get: fullListBytes },
      },
      tables: [
        {
          title: `catch-up: ${n.toLocaleString('en-US')} watchers, organization of ${DEVICES.toLocaleString('en-US')} devices; median (min–max) over ${opts.runs} runs`,
          columns: ['served from', 'missed', 'delta', 'body/watcher', 'ratio', 'B/change', 'wire/watcher', 'all at head ms', 'p50 ms', 'catch-up queries'],
          rows,
        },
      ],
      runs,
      summary: { ...summary, fullListBytes: { watchEvents: fullWatchListBytes, get: fullListBytes }, ratio: spread(ratios) },
      targets,
      notes: [`a full re-list would be ${fmtBytes(fullWatchListBytes)} of watch events per watcher (${fmtBytes(fullListBytes)} as a GET).`],
    };
  },
};
