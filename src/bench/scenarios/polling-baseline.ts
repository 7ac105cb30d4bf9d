import { HEADERS, bearerAuthorization, paths } from '../../protocol/index.js';
import type { Scenario, ScenarioResult, TargetResult } from '../scenario.js';
import { BENCH_ADMIN_TOKEN, type FleetServer } from '../server/fleet-server.js';
import type { BenchDevice, FleetApi } from '../http-api.js';
import { seededOrg } from '../measure/seeded-org.js';
import { LoadPool, workersFor } from '../load/pool.js';
import { endpointOf, fleetWatchSpec } from '../measure/watch-spec.js';
import { nowMs } from '../clock.js';
import { spread, summarize, median } from '../stats.js';
import { fmt, fmtBytes, fmtSpread } from '../format.js';
import { log } from '../log.js';
import { sleep } from '../../util/sleep.js';

const CLIENTS = 1_000;
const DEVICES = 1_000;
const POLL_INTERVAL_MS = 30_000;
const WINDOW_MS = 10_000;
const CHANGE_INTERVAL_MS = 1_000;

interface ModeFigures {
  seconds: number;
  changes: number;
  bytesPerSecond: number;
  cpuCoresUsed: number;
  /** Lists completed (poll) or change deliveries (watch) per second. */
  requestsPerSecond: number;
  /** Poll: median list latency (ms); watch: NaN. */
  p50Ms: number;
  p99Ms: number;
}

interface PollingRun {
  run: number;
  poll: ModeFigures;
  watch: ModeFigures;
  bytesRatio: number;
  cpuRatio: number;
  fullLists: number;
  notModified: number;
}

/** PATCHes devices round-robin every CHANGE_INTERVAL_MS until `stop` resolves; returns the count. */
async function changeLoop(api: FleetApi, org: string, devices: BenchDevice[], until: number, signal: AbortSignal, label: string): Promise<number> {
  let n = 0;
  let next = nowMs();
  while (next < until) {
    signal.throwIfAborted();
    const d = devices[n % devices.length];
    if (!d) break;
    await api.patchDevice(org, d.id, { hostname: `${label}-${n}` });
    n++;
    next += CHANGE_INTERVAL_MS;
    const wait = next - nowMs();
    if (wait > 0) await sleep(wait, signal);
    signal.throwIfAborted();
  }
  return n;
}

async function watchWindow(server: FleetServer, api: FleetApi, org: string, devices: BenchDevice[], pool: LoadPool, signal: AbortSignal, label: string): Promise<ModeFigures> {
  const head = await api.headRevision(org);
  await pool.open(fleetWatchSpec([endpointOf(server.url)], org, head), CLIENTS);
  const c0 = await pool.counters();
  const cpu0 = await server.cpuSeconds(api);
  const t0 = nowMs();
  const changes = await changeLoop(api, org, devices, t0 + WINDOW_MS, signal, label);
  // The last change's fan-out, then the same quiet tail a poll window gets.
  await sleep(500, signal);
  signal.throwIfAborted();
  const cpu1 = await server.cpuSeconds(api);
  const seconds = (nowMs() - t0) / 1000;
  const c1 = await pool.counters();
  await pool.closeAll({ forget: true });
  return {
    seconds,
    changes,
    bytesPerSecond: (c1.wireBytes - c0.wireBytes) / seconds,
    cpuCoresUsed: (cpu1 - cpu0) / seconds,
    requestsPerSecond: (changes * CLIENTS) / seconds,
    p50Ms: Number.NaN,
    p99Ms: Number.NaN,
  };
}

async function pollWindow(
  server: FleetServer,
  api: FleetApi,
  org: string,
  devices: BenchDevice[],
  pool: LoadPool,
  signal: AbortSignal,
  label: string,
): Promise<ModeFigures & { full: number; notModified: number }> {
  const spec = { endpoints: [endpointOf(server.url)], path: paths.devices(org), headers: { [HEADERS.authorization]: bearerAuthorization(BENCH_ADMIN_TOKEN) }, useEtag: true };
  const cpu0 = await server.cpuSeconds(api);
  const t0 = nowMs();
  const polling = pool.pollRun(spec, CLIENTS, POLL_INTERVAL_MS, WINDOW_MS);
  const changes = await changeLoop(api, org, devices, t0 + WINDOW_MS, signal, label);
  const results = await polling;
  const cpu1 = await server.cpuSeconds(api);
  const seconds = (nowMs() - t0) / 1000;
  const failed = results.reduce((n, r) => n + r.failed, 0);
  if (failed > 0) log.warn({ failed, errors: results.flatMap((r) => r.errors).slice(0, 3) }, 'some polls failed');
  const polls = results.reduce((n, r) => n + r.polls - r.failed, 0);
  return {
    seconds,
    changes,
    bytesPerSecond: results.reduce((n, r) => n + r.wireBytes, 0) / seconds,
    cpuCoresUsed: (cpu1 - cpu0) / seconds,
    requestsPerSecond: polls / seconds,
    p50Ms: median(results.map((r) => r.latenciesMs[0] ?? Number.NaN)),
    p99Ms: Math.max(...results.map((r) => r.latenciesMs[1] ?? Number.NaN)),
    full: results.reduce((n, r) => n + r.full, 0),
    notModified: results.reduce((n, r) => n + r.notModified, 0),
  };
}

/** `polling-baseline`: N clients polling the device list every P seconds vs the same N watching, same changes, same run. */
export const pollingBaseline: Scenario = {
  name: 'polling-baseline',
  summary: `${CLIENTS.toLocaleString('en-US')} clients polling a ${DEVICES.toLocaleString('en-US')}-device list every ${POLL_INTERVAL_MS / 1000} s vs watching: bytes/s and server CPU, as a ratio`,
  inDefault: true,
  timeLimitMs: (o) => 240_000 + o.runs * 50_000,
  async run({ opts, signal }): Promise<ScenarioResult> {
    const { server, api, org, devices, seedSeconds } = await seededOrg(DEVICES);
    const pool = await LoadPool.start(workersFor(CLIENTS, opts.socketsPerWorker));
    const runs: PollingRun[] = [];
    try {
      for (let run = 1; run <= opts.runs; run++) {
        log.info({ scenario: 'polling-baseline', run }, 'run');
        let watch: ModeFigures | undefined;
        let poll: (ModeFigures & { full: number; notModified: number }) | undefined;
        // Alternate the order of the two windows between runs.
        if (run % 2 === 1) watch = await watchWindow(server, api, org, devices, pool, signal, `w${run}`);
        poll = await pollWindow(server, api, org, devices, pool, signal, `p${run}`);
        if (run % 2 === 0) watch = await watchWindow(server, api, org, devices, pool, signal, `w${run}`);
        if (!watch) throw new Error('watch window did not run');
        const { full, notModified, ...pollFigures } = poll;
        runs.push({
          run,
          poll: pollFigures,
          watch,
          bytesRatio: poll.bytesPerSecond / watch.bytesPerSecond,
          cpuRatio: poll.cpuCoresUsed / watch.cpuCoresUsed,
          fullLists: full,
          notModified,
        });
      }
    } finally {
      await pool.stop();
    }
    const p = summarize(runs.map((r) => r.poll));
    const w = summarize(runs.map((r) => r.watch));
    const bytesRatio = spread(runs.map((r) => r.bytesRatio));
    const cpuRatio = spread(runs.map((r) => r.cpuRatio));
    const targets: TargetResult[] = [];
    const notes = [
      `poll: ${fmt(median(runs.map((r) => r.fullLists)))} full lists and ${fmt(median(runs.map((r) => r.notModified)))} × 304 per window (median); with a change every ${CHANGE_INTERVAL_MS / 1000} s a poll every ${POLL_INTERVAL_MS / 1000} s nearly always finds the ETag stale.`,
      `poll latency p50 ${fmt(p.p50Ms.median)} ms, p99 ${fmt(p.p99Ms.median)} ms (median over runs).`,
    ];
    return {
      settings: {
        server: server.commandLine,
        seeding: `${DEVICES} devices created through the API in ${Math.round(seedSeconds)} s (shared with other scenarios of this invocation)`,
        clients: CLIENTS,
        devices: DEVICES,
        pollIntervalMs: POLL_INTERVAL_MS,
        windowMs: WINDOW_MS,
        changeIntervalMs: CHANGE_INTERVAL_MS,
        poll: 'GET /api/organizations/{org}/devices (whole list, If-None-Match with the last ETag), one keep-alive connection per client, random phase',
        watch: 'POST /events [{kind: device, gt_revision: head, at_tail: true}]',
        bytes: 'bytes read by the clients\' sockets (headers, framing, bodies) over the window',
        cpu: 'server CPU seconds (/metrics) over the window ÷ window length',
      },
      tables: [
        {
          title: `polling-baseline: ${CLIENTS.toLocaleString('en-US')} clients, ${DEVICES.toLocaleString('en-US')} devices, a change every ${CHANGE_INTERVAL_MS / 1000} s; median (min–max) over ${opts.runs} runs`,
          columns: ['mode', 'bytes/s', 'server CPU (cores)', 'lists or deliveries /s', 'changes'],
          rows: [
            [`poll every ${POLL_INTERVAL_MS / 1000} s`, fmtSpread(p.bytesPerSecond, fmtBytes), fmtSpread(p.cpuCoresUsed), fmtSpread(p.requestsPerSecond), fmt(p.changes.median)],
            ['watch', fmtSpread(w.bytesPerSecond, fmtBytes), fmtSpread(w.cpuCoresUsed), fmtSpread(w.requestsPerSecond), fmt(w.changes.median)],
            ['poll ÷ watch', fmtSpread(bytesRatio), fmtSpread(cpuRatio), '', ''],
          ],
        },
      ],
      runs,
      summary: { poll: p, watch: w, bytesRatio, cpuRatio },
      targets,
      notes,
    };
  },
};
