import { describe, expect, inject, it } from 'vitest';
import { migrate, MIGRATIONS, openPglite, openPostgres } from '../../src/server/db/index.js';
import { createDatabase } from '../support/postgres-server.js';

const ALL = MIGRATIONS.map((m) => m.version);

describe('migrations', () => {
  it('apply on PGlite once', async () => {
    const db = await openPglite(undefined);
    expect(await migrate(db)).toEqual(ALL);
    expect(await migrate(db)).toEqual([]);
    await db.close();
  });

  it.runIf(inject('pgAdminUrl') !== '')('apply exactly once when replicas start together on PostgreSQL', async () => {
    const url = await createDatabase(inject('pgAdminUrl'));
    const dbs = await Promise.all([1, 2, 3, 4].map(() => openPostgres(url, { max: 2 })));
    const results = await Promise.all(dbs.map((db) => migrate(db)));
    expect(results.flat()).toEqual(ALL);
    const rows = await dbs[0]!.query('SELECT version FROM schema_migrations');
    expect(rows).toHaveLength(ALL.length);
    await Promise.all(dbs.map((db) => db.close()));
  });
});
