import { describe, expect, it } from 'vitest';
import { instrument, type Database, type Row } from '../../src/server/db/index.js';

/** The label `instrument` gives `sql` (the metric label of fleetplane_db_queries_total). */
async function labelOf(sql: string): Promise<string> {
  const inner: Database = {
    kind: 'pglite',
    query: async <R extends Row = Row>(): Promise<R[]> => [],
    transaction: (fn) => fn({ query: inner.query, savepoint: () => Promise.reject(new Error('not used')) }),
    listen: () => Promise.reject(new Error('not used')),
    close: async () => undefined,
  };
  let label = '';
  await instrument(inner, (info) => (label = info.label)).query(sql);
  return label;
}

describe('statement labels', () => {
  it.each([
    ['SELECT 1', 'select'],
    ['  update replicas SET x = 1', 'update'],
    ['WITH g AS (SELECT 1) SELECT * FROM g', 'select'],
    ['WITH gone AS (\n DELETE FROM replicas RETURNING id) SELECT 1', 'delete'],
    // A write whose first CTE reads is still a write: idle write counts depend on it.
    ['WITH v AS MATERIALIZED (\n SELECT 1), st AS (\n INSERT INTO t SELECT 1 RETURNING 1) SELECT 1', 'insert'],
    ['WITH v AS NOT MATERIALIZED (SELECT 1), u AS (UPDATE t SET a = 1) SELECT 1', 'update'],
  ])('%s → %s', async (sql, label) => {
    expect(await labelOf(sql)).toBe(label);
  });
});
