import type { FleetApi } from '../http-api.js';
import type { LoadPool } from '../load/pool.js';
import { promValue } from '../prom-text.js';
import type { RawFloorServer } from '../raw-floor/raw-floor-server.js';
import type { RawWriteMode } from '../raw-floor/messages.js';
import { maxOf, median, percentile } from '../stats.js';
import { sleep } from '../../util/sleep.js';

/** Figures of K changes fanned out to N watchers (one run). Times in ms from the write's send. */
export interface FanoutFigures {
  watchers: number;
  changes: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Median over the changes of the time until the last watcher had it. */
  allReceivedMs: number;
  allReceivedWorstMs: number;
  missing: number;
  /** Median round trip of the write itself (PATCH for fleetplane, IPC for raw-floor). */
  writeMs: number;
  cpuMsPerChange: number;
  cpuUsPerDelivery: number;
  fillQueriesPerChange: number;
  catchUpQueriesPerChange: number;
  dbQueriesPerChange: number;
  /**
   * Server-side fan-out time per change: fleetplane's fleetplane_watch_fanout_seconds
   * (bus signal → last socket write, mean), or raw-floor's write loop.
   */
  serverFanoutMs: number;
  /** Largest error of the load workers' clocks against the harness's (half the fastest IPC round trip). */
  clockUncertaintyMs: number;
}

/** Where the server's counters come from (one process's /metrics, or NaN when there is no single one). */
export interface ServerProbe {
  cpuSeconds(): Promise<number>;
  /** /metrics text of the (only) server process; undefined when several processes serve. */
  metrics(): Promise<string | undefined>;
}

const WARMUP_CHANGES = 2;
/** Pause between changes, so each fan-out is measured alone. */
const GAP_MS = 50;

function latencyFigures(perChange: { latencies: Float64Array; missing: number }[]): Pick<FanoutFigures, 'p50Ms' | 'p99Ms' | 'maxMs' | 'allReceivedMs' | 'allReceivedWorstMs' | 'missing'> {
  const total = perChange.reduce((n, c) => n + c.latencies.length, 0);
  const all = new Float64Array(total);
  let at = 0;
  for (const c of perChange) {
    all.set(c.latencies, at);
    at += c.latencies.length;
  }
  const lasts = perChange.map((c) => maxOf(c.latencies));
  return {
    p50Ms: percentile(all, 50),
    p99Ms: percentile(all, 99),
    maxMs: maxOf(all),
    allReceivedMs: median(lasts),
    allReceivedWorstMs: Math.max(...lasts),
    missing: perChange.reduce((n, c) => n + c.missing, 0),
  };
}

interface ServerCounters {
  fill: number;
  catchUp: number;
  db: number;
  fanoutSum: number;
  fanoutCount: number;
}

function counters(text: string | undefined): ServerCounters {
  if (text === undefined) return { fill: Number.NaN, catchUp: Number.NaN, db: Number.NaN, fanoutSum: Number.NaN, fanoutCount: Number.NaN };
  return {
    fill: promValue(text, 'fleetplane_watch_fill_queries_total'),
    catchUp: promValue(text, 'fleetplane_watch_catchup_queries_total'),
    db: promValue(text, 'fleetplane_db_queries_total'),
    fanoutSum: promValue(text, 'fleetplane_watch_fanout_seconds_sum'),
    fanoutCount: promValue(text, 'fleetplane_watch_fanout_seconds_count'),
  };
}

/**
 * K changes (PATCH of one device) to an organization whose N watchers are
 * open in `pool`, one at a time: each write, then wait until every watcher
 * has it. Latency is from the moment the PATCH was sent, so it includes the
 * write's own HTTP round trip and commit.
 */
export async function measureFleetFanout(opts: {
  api: FleetApi;
  probe: ServerProbe;
  pool: LoadPool;
  org: string;
  deviceId: string;
  changes: number;
  timeoutMs: number;
  signal: AbortSignal;
  label: string;
}): Promise<FanoutFigures> {
  const { api, pool, org, deviceId, probe } = opts;
  let serial = 0;
  const change = async (): Promise<{ latencies: Float64Array; missing: number; writeMs: number }> => {
    opts.signal.throwIfAborted();
    const { device, res } = await api.patchDevice(org, deviceId, { hostname: `${opts.label}-${process.pid}-${serial++}` });
    const r = await pool.collectChange(device.revision, opts.timeoutMs);
    const latencies = r.times.filter((t) => !Number.isNaN(t)).map((t) => t - res.sentAt);
    await sleep(GAP_MS, opts.signal);
    opts.signal.throwIfAborted();
    return { latencies, missing: r.missing, writeMs: res.doneAt - res.sentAt };
  };
  for (let i = 0; i < WARMUP_CHANGES; i++) await change();
  // The scrapes stay outside the CPU window: rendering /metrics is the harness's cost, not the fan-out's.
  const m0 = counters(await probe.metrics());
  const cpu0 = await probe.cpuSeconds();
  const perChange = [];
  for (let i = 0; i < opts.changes; i++) perChange.push(await change());
  const cpu1 = await probe.cpuSeconds();
  const m1 = counters(await probe.metrics());
  const k = opts.changes;
  const cpuMsPerChange = ((cpu1 - cpu0) * 1000) / k;
  return {
    watchers: pool.sockets,
    changes: k,
    ...latencyFigures(perChange),
    writeMs: median(perChange.map((c) => c.writeMs)),
    cpuMsPerChange,
    cpuUsPerDelivery: (cpuMsPerChange * 1000) / Math.max(1, pool.sockets),
    fillQueriesPerChange: (m1.fill - m0.fill) / k,
    catchUpQueriesPerChange: (m1.catchUp - m0.catchUp) / k,
    dbQueriesPerChange: (m1.db - m0.db) / k,
    serverFanoutMs: ((m1.fanoutSum - m0.fanoutSum) * 1000) / (m1.fanoutCount - m0.fanoutCount),
    clockUncertaintyMs: pool.clockUncertaintyMs,
  };
}

/** The same measurement against the raw-floor server: K fires of one pre-encoded line to all held responses. */
export async function measureRawFanout(opts: {
  raw: RawFloorServer;
  pool: LoadPool;
  changes: number;
  mode: RawWriteMode;
  timeoutMs: number;
  signal: AbortSignal;
  firstRevision: number;
}): Promise<FanoutFigures & { loopMs: number; loopCpuUsPerSocket: number }> {
  let revision = opts.firstRevision;
  const fire = async (): Promise<{ latencies: Float64Array; missing: number; writeMs: number; loopMs: number; loopCpuUs: number }> => {
    opts.signal.throwIfAborted();
    const rev = revision++;
    const f = await opts.raw.fire(opts.mode, rev);
    const r = await opts.pool.collectChange(rev, opts.timeoutMs);
    const latencies = r.times.filter((t) => !Number.isNaN(t)).map((t) => t - f.sentAt);
    await sleep(GAP_MS, opts.signal);
    opts.signal.throwIfAborted();
    return { latencies, missing: r.missing, writeMs: f.loopMs, loopMs: f.loopMs, loopCpuUs: f.loopCpuUs };
  };
  for (let i = 0; i < WARMUP_CHANGES; i++) await fire();
  const s0 = await opts.raw.stats();
  const perChange = [];
  for (let i = 0; i < opts.changes; i++) perChange.push(await fire());
  const s1 = await opts.raw.stats();
  const k = opts.changes;
  const cpuMsPerChange = (s1.cpuUs - s0.cpuUs) / 1000 / k;
  const n = Math.max(1, s1.held);
  return {
    watchers: s1.held,
    changes: k,
    ...latencyFigures(perChange),
    writeMs: median(perChange.map((c) => c.writeMs)),
    cpuMsPerChange,
    cpuUsPerDelivery: (cpuMsPerChange * 1000) / n,
    fillQueriesPerChange: Number.NaN,
    catchUpQueriesPerChange: Number.NaN,
    dbQueriesPerChange: Number.NaN,
    serverFanoutMs: median(perChange.map((c) => c.loopMs)),
    clockUncertaintyMs: opts.pool.clockUncertaintyMs,
    loopMs: median(perChange.map((c) => c.loopMs)),
    loopCpuUsPerSocket: median(perChange.map((c) => c.loopCpuUs)) / n,
  };
}
