import type { FleetApi } from '../http-api.js';
import { nowMs } from '../clock.js';
import { procTreeStats } from '../proc-stats.js';
import { promValue } from '../prom-text.js';
import type { BenchPostgres } from '../server/postgres.js';
import type { RestartableServer } from '../server/restartable-server.js';
import { diffStatements, statementCounts, type StatementCounts } from './db-statements.js';

/** The server's counters at one moment. */
export interface ServerSample {
  at: number;
  /** CPU (user + system) of the server's process tree, from /proc/<pid>/stat (10 ms ticks). */
  cpuSeconds: number;
  /**
   * CPU of PostgreSQL (postmaster and backends): the separate cluster's, or
   * on the embedded storage the part of `cpuSeconds` that isn't Node.js (its
   * PostgreSQL runs in the server's process tree).
   */
  databaseCpuSeconds: number;
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
}

/** What happened between two samples. */
export interface ServerDelta {
  seconds: number;
  cpuSeconds: number;
  databaseCpuSeconds: number;
  statements: StatementCounts;
  statusBatches: number;
  watchQueries: number;
  convergenceQueries: number;
}

/**
 * Reads the server: CPU from /proc over its process tree (every worker of
 * `--workers`), statements from `/metrics` (under `--workers` the primary
 * sums every worker's). CPU is read before the scrape, so a delta includes
 * the cost of one scrape.
 */
export async function sampleServer(server: RestartableServer, api: FleetApi, pg: BenchPostgres | undefined): Promise<ServerSample> {
  const at = nowMs();
  const tree = server.current.procStats();
  const pgPid = pg?.pid();
  const databaseCpuSeconds = pgPid !== undefined ? procTreeStats(pgPid).cpuSeconds : tree.cpuSeconds - tree.nodeCpuSeconds;
  const text = await api.metricsText();
  return {
    at,
    cpuSeconds: tree.cpuSeconds,
    databaseCpuSeconds,
    statements: statementCounts(text),
    statusBatches: promValue(text, 'fleetplane_status_batches_total'),
    watchQueries: promValue(text, 'fleetplane_watch_fill_queries_total') + promValue(text, 'fleetplane_watch_catchup_queries_total'),
    convergenceQueries: promValue(text, 'fleetplane_convergence_stream_queries_total'),
  };
}

export function serverDelta(after: ServerSample, before: ServerSample): ServerDelta {
  return {
    seconds: (after.at - before.at) / 1000,
    cpuSeconds: after.cpuSeconds - before.cpuSeconds,
    databaseCpuSeconds: after.databaseCpuSeconds - before.databaseCpuSeconds,
    statements: diffStatements(after.statements, before.statements),
    statusBatches: after.statusBatches - before.statusBatches,
    watchQueries: after.watchQueries - before.watchQueries,
    convergenceQueries: after.convergenceQueries - before.convergenceQueries,
  };
}
