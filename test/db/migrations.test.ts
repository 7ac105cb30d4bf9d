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

  it('5 gives devices stored before it no approved routes, and organizations no auto-approval rules', async () => {
    const db = await openPglite(undefined);
    await migrate(db);
    const org = '00000000-0000-4000-8000-000000000001';
    const device = '00000000-0000-4000-8000-000000000002';
    await db.query('INSERT INTO orgs (id, head_revision) VALUES ($1, 2)', [org]);
    const network = { ipv4_cidr: '100.64.0.0/16', mtu: 1420, resolvers: [], routes: [] };
    await db.query(`INSERT INTO objects (id, org_id, kind, revision, value) VALUES ($1, $1, 'organization', 1, $2)`, [org, JSON.stringify({ id: org, network })]);
    await db.query(`INSERT INTO objects (id, org_id, kind, revision, value) VALUES ($1, $2, 'device', 2, $3)`, [
      device,
      org,
      JSON.stringify({ id: device, advertise_cidrs: ['10.20.0.0/17'] }),
    ]);
    await db.query('DELETE FROM schema_migrations WHERE version = 5');
    expect(await migrate(db)).toEqual([5]);
    const rows = await db.query<{ kind: string; value: Record<string, unknown> }>('SELECT kind, value FROM objects ORDER BY kind');
    expect(rows.map((r) => [r.kind, r.value])).toEqual([
      ['device', { id: device, advertise_cidrs: ['10.20.0.0/17'], approved_cidrs: [] }],
      ['organization', { id: org, network: { ...network, auto_approve_cidrs: [] } }],
    ]);
    await db.close();
  });

  it.runIf(inject('pgAdminUrl') !== '')('sessions on PostgreSQL run with JIT off (the planner overrates our statements)', async () => {
    const db = await openPostgres(await createDatabase(inject('pgAdminUrl')), { max: 2 });
    const rows = await Promise.all([1, 2].map(() => db.query<{ jit: string }>('SHOW jit')));
    expect(rows.flat()).toEqual([{ jit: 'off' }, { jit: 'off' }]);
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
