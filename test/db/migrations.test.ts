import { beforeAll, describe, expect, inject, it } from 'vitest';
import { migrate, MIGRATIONS, openPglite, openPostgres, pgliteTemplate } from '../../src/server/db/index.js';
import { createDatabase } from '../support/postgres-server.js';

const ALL = MIGRATIONS.map((m) => m.version);

// A new in-memory database is initdb's output; dumped once, each test loads it instead of running initdb
// again (most of the seconds a new PGlite takes), and starts from the same unmigrated database.
let blank: Blob;
const newPglite = () => openPglite(undefined, blank);
beforeAll(async () => {
  blank = await pgliteTemplate(async () => undefined);
});

describe('migrations', () => {
  it('apply on PGlite once', async () => {
    const db = await newPglite();
    expect(await migrate(db)).toEqual(ALL);
    expect(await migrate(db)).toEqual([]);
    await db.close();
  });

  it('5 gives devices stored before it no approved routes, and organizations no auto-approval rules', async () => {
    const db = await newPglite();
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

describe('migration 15 (credential makers)', () => {
  it('gives tokens and keys made before their maker from the audit log, and revokes what a revoked maker made', async () => {
    const db = await newPglite();
    await migrate(db, MIGRATIONS.filter((m) => m.version < 15));
    const id = (n: number): string => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
    const [org, user, session, key, t1, t2, t3, t4, t5, r1, r2] = [id(1), id(2), id(3), id(4), id(5), id(6), id(7), id(8), id(9), id(10), id(11)] as const;
    await db.query('INSERT INTO orgs (id) VALUES ($1)', [org]);
    await db.query(`INSERT INTO users (id, issuer, subject) VALUES ($1, 'https://idp.test', 's')`, [user]);
    await db.query(`INSERT INTO tokens (id, secret_hash, kind, user_id, role, expires_at) VALUES ($1, 'h-s', 'session', $2, 'user', now() + interval '1 hour')`, [session, user]);
    await db.query(
      `INSERT INTO tokens (id, secret_hash, kind, user_id, org_ids, role, expires_at, revoked_at) VALUES ($1, 'h-k', 'api_key', $2, ARRAY[$3::uuid], 'admin', now() + interval '1 day', now())`,
      [key, user, org],
    );
    for (const [t, n] of [[t1, 1], [t2, 2], [t3, 3], [t4, 4], [t5, 5]] as const) {
      await db.query(`INSERT INTO tokens (id, secret_hash, kind, org_id, role) VALUES ($1, $2, 'org', $3, 'admin')`, [t, `h-t${n}`, org]);
    }
    for (const [r, n] of [[r1, 1], [r2, 2]] as const) {
      await db.query(`INSERT INTO registration_keys (id, secret_hash, org_id) VALUES ($1, $2, $3)`, [r, `h-r${n}`, org]);
    }
    const created = (kind: string, object: string, actorType: string, actorId: string | null, credential: string | null) =>
      db.query(`INSERT INTO audit_log (org_id, actor_type, actor_id, credential_id, action, kind, object_id) VALUES ($1, $2, $3, $4, 'create', $5, $6)`, [
        org,
        actorType,
        actorId,
        credential,
        kind,
        object,
      ]);
    await created('token', t1, 'user', user, session);
    await created('token', t2, 'token', t1, t1);
    await created('token', t3, 'api_key', user, key);
    await created('token', t4, 'admin', null, null);
    await created('registration_key', r1, 'token', t2, t2);
    await created('registration_key', r2, 'api_key', user, key);

    expect((await migrate(db)).slice(0, 1)).toEqual([15]);
    const tokens = await db.query<{ id: string; created_by_kind: string | null; created_by_credential: string | null; created_by_user: string | null; maker_chain: string[]; revoked: boolean }>(
      `SELECT id, created_by_kind, created_by_credential, created_by_user, maker_chain, revoked_at IS NOT NULL AS revoked FROM tokens WHERE kind = 'org' ORDER BY id`,
    );
    expect(tokens.map((t) => [t.id, t.created_by_kind, t.created_by_credential, t.created_by_user, t.maker_chain, t.revoked])).toEqual([
      [t1, 'session', session, user, [session], false],
      [t2, 'token', t1, user, [session, t1], false],
      [t3, 'api_key', key, user, [key], true],
      [t4, 'admin', null, null, [], false],
      [t5, null, null, null, [], false],
    ]);
    const keys = await db.query<{ id: string; created_by_kind: string; maker_chain: string[] }>('SELECT id, created_by_kind, maker_chain FROM registration_keys');
    expect(keys.map((k) => [k.id, k.created_by_kind, k.maker_chain])).toEqual([[r1, 'token', [session, t1, t2]]]);
    const audited = await db.query<{ actor_type: string; action: string; kind: string; object_id: string; details: Record<string, unknown> }>(
      `SELECT actor_type, action, kind, object_id, details FROM audit_log WHERE actor_type = 'system' ORDER BY id`,
    );
    expect(audited).toEqual([
      { actor_type: 'system', action: 'revoke', kind: 'token', object_id: t3, details: { cause: { kind: 'api_key', id: key }, reason: 'maker_revoked_before_upgrade' } },
      { actor_type: 'system', action: 'delete', kind: 'registration_key', object_id: r2, details: { cause: { kind: 'api_key', id: key }, reason: 'maker_revoked_before_upgrade' } },
    ]);
    await db.close();
  });
});
