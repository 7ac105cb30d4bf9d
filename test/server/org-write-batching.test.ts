import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAudited, SYSTEM_SCOPE } from '../../src/server/audit/index.js';
import { ApiError } from '../../src/server/errors.js';
import type { Database } from '../../src/server/db/index.js';
import type { FleetServer } from '../../src/server/index.js';
import { writeInOrg } from '../../src/server/store/org-write.js';
import { pgAdminUrl, startTestServer, wgKey, type BackendName } from './fixtures.js';

/** These writes stand for the admin token's: every tag is theirs to give. */
const ALL_TAGS = { all: true } as const;

/** Records the UPDATE statements sent in transactions of `db` until the returned function is called. */
function watchUpdates(db: Database, out: string[]): () => void {
  const original = db.transaction.bind(db);
  const observed: Database['transaction'] = (fn) =>
    original((tx) =>
      fn({
        query: (text, params) => {
          if (/^\s*UPDATE/i.test(text)) out.push(text.trim());
          return tx.query(text, params);
        },
        savepoint: (f) => tx.savepoint(f),
      }),
    );
  db.transaction = observed;
  return () => {
    db.transaction = original;
  };
}

const backends: BackendName[] = pgAdminUrl() === '' ? ['pglite'] : ['pglite', 'postgres'];

describe.each(backends)('writes of one organization that arrive together commit together (%s)', (backend) => {
  // One server per backend: each test writes in an organization of its own.
  let server: FleetServer;
  beforeAll(async () => {
    server = await startTestServer(backend);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('each write keeps its own outcome and revision: a failing one is undone alone, the others commit, revisions dense in arrival order', () =>
    runAudited(SYSTEM_SCOPE, async () => {
      const store = server.ctx.store;
      const org = await store.organizations.create({ name: 'burst' });
      const taken = wgKey();
      const head = (await store.devices.create(org.id, { hostname: 'first', public_key: taken }, undefined, 0, ALL_TAGS)).device.revision;
      // Forty creates at once; every tenth reuses a public key, which the store refuses (409).
      const results = await Promise.allSettled(
        Array.from({ length: 40 }, (_, i) => store.devices.create(org.id, { hostname: `d${i}`, public_key: i % 10 === 9 ? taken : wgKey() }, undefined, 0, ALL_TAGS)),
      );
      const ok = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.device.revision] : []));
      const failed = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
      expect(ok).toHaveLength(36);
      expect(failed).toHaveLength(4);
      for (const err of failed) expect(err).toMatchObject({ code: 'conflict' });
      expect([...ok].sort((a, b) => a - b)).toEqual(Array.from({ length: 36 }, (_, i) => head + 1 + i));
      // Arrival order: the creates were started in index order.
      expect(ok).toEqual([...ok].sort((a, b) => a - b));
      // Nothing of the refused writes took a revision: the next write takes the one after the last success.
      expect((await store.devices.create(org.id, { hostname: 'after', public_key: wgKey() }, undefined, 0, ALL_TAGS)).device.revision).toBe(head + 37);
    }));

  it('a write that throws after its statements leaves nothing behind, and the write after it still commits', () =>
    runAudited(SYSTEM_SCOPE, async () => {
      const store = server.ctx.store;
      const org = await store.organizations.create({ name: 'undo' });
      const head = (await store.securityGroups.create(org.id, { description: 'before' })).revision;
      const [bad, good, again] = await Promise.allSettled([
        writeInOrg(server.db, store.bus, org.id, async (w) => {
          await w.revision();
          throw new ApiError('conflict', 'changed my mind');
        }),
        store.securityGroups.create(org.id, { description: 'kept' }),
        store.securityGroups.create(org.id, { description: 'kept too' }),
      ]);
      expect(bad).toMatchObject({ status: 'rejected', reason: { code: 'conflict' } });
      expect(good).toMatchObject({ status: 'fulfilled', value: { revision: head + 1 } });
      expect(again).toMatchObject({ status: 'fulfilled', value: { revision: head + 2 } });
    }));

  it('a pipelined statement that fails fails its write, alone or in a batch: nothing of the write commits, and the error is the statement\'s', () =>
    runAudited(SYSTEM_SCOPE, async () => {
      const store = server.ctx.store;
      const org = await store.organizations.create({ name: 'pipelined' });
      const head = (await store.securityGroups.create(org.id, { description: 'before' })).revision;
      const failing = () =>
        writeInOrg(server.db, store.bus, org.id, async (w) => {
          await w.revision();
          void w.pipelined(w.tx.query('UPDATE orgs SET compacted_revision = 7 WHERE id = $1', [org.id]));
          void w.pipelined(w.tx.query('SELECT 1 / 0'));
          return 'unreachable';
        });
      // Alone.
      await expect(failing()).rejects.toMatchObject({ code: '22012' });
      // In a batch with two writes that commit: the first write runs alone, the three after it share one transaction.
      const [, bad, good, again] = await Promise.allSettled([
        writeInOrg(server.db, store.bus, org.id, async (w) => w.tx.query('SELECT pg_sleep(0.05)')),
        failing(),
        store.securityGroups.create(org.id, { description: 'kept' }),
        store.securityGroups.create(org.id, { description: 'kept too' }),
      ]);
      expect(bad).toMatchObject({ status: 'rejected', reason: { code: '22012' } });
      expect(good).toMatchObject({ status: 'fulfilled', value: { revision: head + 1 } });
      expect(again).toMatchObject({ status: 'fulfilled', value: { revision: head + 2 } });
      const compacted = async (): Promise<number> =>
        Number((await server.db.query<{ c: number }>('SELECT compacted_revision AS c FROM orgs WHERE id = $1', [org.id]))[0]?.c);
      expect(await compacted()).toBe(0);
      // A pipelined statement's work is committed with its write, and the write resolves after its answer.
      const set = await writeInOrg(server.db, store.bus, org.id, async (w) => {
        await w.revision();
        return w.pipelined(w.tx.query<{ c: number }>('UPDATE orgs SET compacted_revision = 7 WHERE id = $1 RETURNING compacted_revision AS c', [org.id]));
      });
      expect(set.map((r) => Number(r.c))).toEqual([7]);
      expect(await compacted()).toBe(7);
    }));

  it('a write batched after its organization\'s delete gets 404, and the delete stands', () =>
    runAudited(SYSTEM_SCOPE, async () => {
      const store = server.ctx.store;
      const org = await store.organizations.create({ name: 'gone' });
      // The first write runs alone; the two after it arrive meanwhile and share one transaction.
      const [first, deleted, late] = await Promise.allSettled([
        writeInOrg(server.db, store.bus, org.id, async (w) => w.tx.query('SELECT pg_sleep(0.05)')),
        store.organizations.delete(org.id),
        store.securityGroups.create(org.id, { description: 'too late' }),
      ]);
      expect(first).toMatchObject({ status: 'fulfilled' });
      expect(deleted).toMatchObject({ status: 'fulfilled' });
      expect(late).toMatchObject({ status: 'rejected', reason: { code: 'not_found' } });
      expect(await server.db.query('SELECT id FROM objects WHERE org_id = $1 AND kind = $2', [org.id, 'security_group'])).toEqual([]);
    }));

  it('a batch runs each write once when all succeed, and runs it again with a savepoint each when one fails (the writes up to the failure twice): what commits is the last run', () =>
    runAudited(SYSTEM_SCOPE, async () => {
      const store = server.ctx.store;
      const org = await store.organizations.create({ name: 'runs' });
      const head = (await store.securityGroups.create(org.id, { description: 'before' })).revision;
      const runs = new Map<string, number>();
      const counted = (name: string, fail = false) =>
        writeInOrg(server.db, store.bus, org.id, async (w) => {
          runs.set(name, (runs.get(name) ?? 0) + 1);
          const revision = await w.revision();
          void w.pipelined(w.tx.query('UPDATE orgs SET compacted_revision = compacted_revision WHERE id = $1', [org.id]));
          if (fail) throw new ApiError('conflict', 'no');
          return revision;
        });
      const alone = () => writeInOrg(server.db, store.bus, org.id, async (w) => w.tx.query('SELECT pg_sleep(0.05)'));
      // All succeed: the batch of three after the first runs once.
      const clean = await Promise.all([alone(), counted('a'), counted('b'), counted('c')]);
      expect(clean.slice(1)).toEqual([head + 1, head + 2, head + 3]);
      expect(Object.fromEntries(runs)).toEqual({ a: 1, b: 1, c: 1 });
      // The middle one fails: the batch runs again with a savepoint per write; the others commit once, with dense revisions.
      runs.clear();
      const [, d, e, f] = await Promise.allSettled([alone(), counted('d'), counted('e', true), counted('f')]);
      expect(d).toMatchObject({ status: 'fulfilled', value: head + 4 });
      expect(e).toMatchObject({ status: 'rejected', reason: { code: 'conflict' } });
      expect(f).toMatchObject({ status: 'fulfilled', value: head + 5 });
      // The first run stopped at the failure: f ran only in the second.
      expect(Object.fromEntries(runs)).toEqual({ d: 2, e: 2, f: 1 });
      const rows = await server.db.query<{ head_revision: number }>('SELECT head_revision FROM orgs WHERE id = $1', [org.id]);
      expect(Number(rows[0]?.head_revision)).toBe(head + 5);
    }));

  it('device patches in one batch read what the batch\'s earlier writes left: the same device twice, and a device deleted before its patch', () =>
    runAudited(SYSTEM_SCOPE, async () => {
      const store = server.ctx.store;
      const org = await store.organizations.create({ name: 'reads' });
      const a = (await store.devices.create(org.id, { hostname: 'a', public_key: wgKey() }, undefined, 0, ALL_TAGS)).device;
      const b = (await store.devices.create(org.id, { hostname: 'b', public_key: wgKey() }, undefined, 0, ALL_TAGS)).device;
      const alone = () => writeInOrg(server.db, store.bus, org.id, async (w) => w.tx.query('SELECT pg_sleep(0.05)'));
      // Two batches: one where every write succeeds (no second run to mend a stale read), then one with a failure.
      const [, first, second] = await Promise.allSettled([
        alone(),
        store.devices.patch(org.id, a.id, { hostname: 'a1' }, ALL_TAGS),
        store.devices.patch(org.id, a.id, { endpoints: [{ source: 'stun', address: '203.0.113.1:20000' }] }, ALL_TAGS),
      ]);
      const [, deleted, late] = await Promise.allSettled([alone(), store.devices.delete(org.id, b.id), store.devices.patch(org.id, b.id, { hostname: 'b1' }, ALL_TAGS)]);
      expect(first).toMatchObject({ status: 'fulfilled', value: { hostname: 'a1' } });
      // The second patch kept the first's hostname: it read the row the first left, not the one read before the batch.
      expect(second).toMatchObject({ status: 'fulfilled', value: { hostname: 'a1', endpoints: [{ source: 'stun', address: '203.0.113.1:20000' }] } });
      expect(deleted).toMatchObject({ status: 'fulfilled' });
      expect(late).toMatchObject({ status: 'rejected', reason: { code: 'not_found' } });
      const now = await store.devices.get(org.id, a.id);
      expect(now).toMatchObject({ hostname: 'a1', endpoints: [{ source: 'stun', address: '203.0.113.1:20000' }] });
      expect(await store.devices.get(org.id, b.id)).toBeUndefined();
    }));

  it('a batch that commits at once writes the revision counter once, whatever its number of writes, and the head is its last revision', () =>
    runAudited(SYSTEM_SCOPE, async () => {
      const store = server.ctx.store;
      const org = await store.organizations.create({ name: 'counter' });
      const devices = [];
      for (let i = 0; i < 12; i++) devices.push((await store.devices.create(org.id, { hostname: `d${i}`, public_key: wgKey() }, undefined, 0, ALL_TAGS)).device);
      const updates: string[] = [];
      const counted = writeInOrg(server.db, store.bus, org.id, async (w) => w.tx.query('SELECT pg_sleep(0.05)'));
      // The twelve patches wait behind the write above, then run as one batch; the statements they send are counted.
      const unsubscribe = watchUpdates(server.db, updates);
      const patched = await Promise.all(devices.map((d, i) => store.devices.patch(org.id, d.id, { hostname: `p${i}` }, ALL_TAGS)));
      await counted;
      unsubscribe();
      const revisions = patched.map((d) => d.revision);
      expect(revisions).toEqual(Array.from({ length: 12 }, (_, i) => (revisions[0] ?? 0) + i));
      expect(updates.filter((t) => /^UPDATE orgs SET head_revision/.test(t))).toHaveLength(1);
      expect(updates.filter((t) => /^UPDATE objects/.test(t))).toHaveLength(12);
      const [row] = await server.db.query<{ head_revision: unknown }>('SELECT head_revision FROM orgs WHERE id = $1', [org.id]);
      expect(Number(row?.head_revision)).toBe(revisions.at(-1));
    }));
});
