import { ROUTES } from '../../protocol/index.js';
import type { FleetApi } from '../http-api.js';
import { nowMs } from '../clock.js';
import { procTreeStats } from '../proc-stats.js';
import { promValue } from '../prom-text.js';
import type { BenchPostgres } from '../server/postgres.js';
import type { RestartableServer } from '../server/restartable-server.js';
import { diffStatements, statementCounts, type StatementCounts } from './db-statements.js';

/** CPU of the server's process tree at one instant. */
export interface CpuReading {
  at: number;
  /** CPU (user + system) of the server's process tree, from /proc/<pid>/stat (10 ms ticks). */
  cpuSeconds: number;
  /**
   * CPU of PostgreSQL (postmaster and backends): the separate cluster's, or
   * on the embedded storage the part of `cpuSeconds` that isn't Node.js (its
   * PostgreSQL runs in the server's process tree).
   */
  databaseCpuSeconds: number;
}

/** The server's counters at one moment: its CPU read just before and just after the `/metrics` scrape. */
export interface ServerSample {
  beforeScrape: CpuReading;
  afterScrape: CpuReading;
  statements: StatementCounts;
  /** `fleetplane_status_batches_total` (NaN until the server has the status batcher). */
  statusBatches: number;
  /**
   * Statements that are neither a write's nor an ACK's, counted by their own
   * metrics: tail-cache fills, watch catch-up reads, convergence-stream reads
   * (NaN while a metric doesn't exist).
   */
  watchQueries: number;
  convergenceQueries: number;
  /** `PATCH .../devices/{id}` answered, and their summed time in the server (its request histogram). */
  devicePatches: number;
  devicePatchSeconds: number;
  /** Events the server wrote to watch streams (`fleetplane_watch_events_written_total`), and its tail-cache fills. */
  eventsWritten: number;
  fillQueries: number;
}

/** What happened between two samples. */
export interface ServerDelta {
  seconds: number;
  cpuSeconds: number;
  databaseCpuSeconds: number;
  /** Server CPU of the later sample's `/metrics` scrape: the bench's own, outside `cpuSeconds`. */
  scrapeCpuSeconds: number;
  statements: StatementCounts;
  statusBatches: number;
  watchQueries: number;
  convergenceQueries: number;
  devicePatches: number;
  devicePatchSeconds: number;
  eventsWritten: number;
  fillQueries: number;
}

const DEVICE_PATCH = { method: 'PATCH', route: ROUTES.device };

function readCpu(server: RestartableServer, pg: BenchPostgres | undefined): CpuReading {
  const at = nowMs();
  const tree = server.current.procStats();
  const pgPid = pg?.pid();
  const databaseCpuSeconds = pgPid !== undefined ? procTreeStats(pgPid).cpuSeconds : tree.cpuSeconds - tree.nodeCpuSeconds;
  return { at, cpuSeconds: tree.cpuSeconds, databaseCpuSeconds };
}

/**
 * Reads the server: CPU from /proc over its process tree (every worker of
 * `--workers`), statements from `/metrics` (under `--workers` the primary
 * sums every worker's). CPU is read on both sides of the scrape: a delta
 * runs from the end of the earlier scrape to the start of the later one,
 * so it holds none of the bench's own scrapes (one `/metrics` under
 * `--workers` gathers every worker's registry and may recount the devices),
 * and says what the later one cost.
 */
export async function sampleServer(server: RestartableServer, api: FleetApi, pg: BenchPostgres | undefined): Promise<ServerSample> {
  const beforeScrape = readCpu(server, pg);
  const text = await api.metricsText();
  const afterScrape = readCpu(server, pg);
  return {
    beforeScrape,
    afterScrape,
    statements: statementCounts(text),
    statusBatches: promValue(text, 'fleetplane_status_batches_total'),
    watchQueries: promValue(text, 'fleetplane_watch_fill_queries_total') + promValue(text, 'fleetplane_watch_catchup_queries_total'),
    convergenceQueries: promValue(text, 'fleetplane_convergence_stream_queries_total'),
    devicePatches: promValue(text, 'fleetplane_http_request_duration_seconds_count', DEVICE_PATCH),
    devicePatchSeconds: promValue(text, 'fleetplane_http_request_duration_seconds_sum', DEVICE_PATCH),
    eventsWritten: promValue(text, 'fleetplane_watch_events_written_total'),
    fillQueries: promValue(text, 'fleetplane_watch_fill_queries_total'),
  };
}

export function serverDelta(after: ServerSample, before: ServerSample): ServerDelta {
  const from = before.afterScrape;
  const to = after.beforeScrape;
  return {
    seconds: (to.at - from.at) / 1000,
    cpuSeconds: to.cpuSeconds - from.cpuSeconds,
    databaseCpuSeconds: to.databaseCpuSeconds - from.databaseCpuSeconds,
    scrapeCpuSeconds: after.afterScrape.cpuSeconds - after.beforeScrape.cpuSeconds,
    statements: diffStatements(after.statements, before.statements),
    statusBatches: after.statusBatches - before.statusBatches,
    watchQueries: after.watchQueries - before.watchQueries,
    convergenceQueries: after.convergenceQueries - before.convergenceQueries,
    // A metric first exported during the window (no PATCH of a device before it) starts from 0.
    devicePatches: after.devicePatches - (Number.isNaN(before.devicePatches) ? 0 : before.devicePatches),
    devicePatchSeconds: after.devicePatchSeconds - (Number.isNaN(before.devicePatchSeconds) ? 0 : before.devicePatchSeconds),
    eventsWritten: after.eventsWritten - before.eventsWritten,
    fillQueries: after.fillQueries - before.fillQueries,
  };
}
