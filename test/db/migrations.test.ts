import { describe, expect, inject, it } from 'vitest';
import { migrate, openPglite, openPostgres, SCHEMA_VERSION } from '../../src/server/db/index.js';
import { createDatabase } from '../support/postgres-server.js';

describe('migrations', () => {
  it('apply on PGlite once', async () => {
    const db = await openPglite(undefined);
    expect(await migrate(db)).toEqual([SCHEMA_VERSION]);
    expect(await migrate(db)).toEqual([]);
    await db.close();
  });

  it.runIf(inject('pgAdminUrl') !== '')('apply exactly once when replicas start together on PostgreSQL', async () => {
    const url = await createDatabase(inject('pgAdminUrl'));
    const dbs = await Promise.all([1, 2, 3, 4].map(() => openPostgres(url, { max: 2 })));
    const results = await Promise.all(dbs.map((db) => migrate(db)));
    expect(results.flat()).toEqual([SCHEMA_VERSION]);
    const rows = await dbs[0]!.query('SELECT version FROM schema_migrations');
    expect(rows).toHaveLength(1);
    await Promise.all(dbs.map((db) => db.close()));
  });
});
