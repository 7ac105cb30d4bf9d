/**
 * Database statements from the server's `/metrics`:
 * `fleetplane_db_queries_total{statement, ok}`, summed over `ok`. The
 * server labels a statement with its first SQL keyword, after a leading
 * `WITH name AS (` (src/server/db/instrumented.ts): `WITH st AS (INSERT …)`
 * is an insert, but a write behind a leading SELECT CTE counts as a select.
 */
export type StatementCounts = Record<string, number>;

const METRIC = 'fleetplane_db_queries_total';
const WRITES = new Set(['insert', 'update', 'delete']);
const LABEL = /statement="([^"]*)"/;

/** Statements by label, from Prometheus text (every sample of the metric). */
export function statementCounts(metricsText: string): StatementCounts {
  const out: StatementCounts = {};
  for (const line of metricsText.split('\n')) {
    if (!line.startsWith(`${METRIC}{`)) continue;
    const close = line.indexOf('}');
    const label = LABEL.exec(line.slice(0, close))?.[1] ?? 'other';
    const value = Number(line.slice(close + 1).trim().split(' ')[0]);
    if (Number.isFinite(value)) out[label] = (out[label] ?? 0) + value;
  }
  return out;
}

export function diffStatements(after: StatementCounts, before: StatementCounts): StatementCounts {
  const out: StatementCounts = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

export function totalStatements(c: StatementCounts): number {
  return Object.values(c).reduce((n, v) => n + v, 0);
}

/** INSERT, UPDATE and DELETE statements (by label). */
export function writeStatements(c: StatementCounts): number {
  return Object.entries(c).reduce((n, [k, v]) => n + (WRITES.has(k) ? v : 0), 0);
}

/** "select 3, update 1". */
export function describeStatements(c: StatementCounts, per = 1): string {
  const parts = Object.entries(c)
    .filter(([, v]) => v !== 0)
    .sort(([, a], [, b]) => b - a)
    .map(([k, v]) => `${k} ${Number.isInteger(v / per) ? v / per : (v / per).toFixed(1)}`);
  return parts.length > 0 ? parts.join(', ') : 'none';
}
