import { describe, expect, inject, it } from 'vitest';
import pino from 'pino';
import { migrate, openPostgres, type Database } from '../../src/server/db/index.js';
import { listReplicas, ReplicaRegistry } from '../../src/server/replicas/index.js';
import { createDatabase } from '../support/postgres-server.js';

const adminUrl = inject('pgAdminUrl');
const logger = pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' });

async function eventually(what: string, condition: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function rowIds(db: Database): Promise<string[]> {
  const rows = await db.query<{ id: string }>('SELECT id FROM replicas ORDER BY id');
  return rows.map((r) => r.id);
}

function registry(db: Database, id: string, leaseTtlMs = 1000): ReplicaRegistry {
  return new ReplicaRegistry({ db, id, privateUrl: `http://127.0.0.1:1/${id}`, leaseTtlMs, logger });
}

describe.runIf(adminUrl !== '')('ReplicaRegistry on PostgreSQL', () => {
  async function twoReplicas(): Promise<{ dbA: Database; dbB: Database; close(): Promise<void> }> {
    const url = await createDatabase(adminUrl, 'replicas');
    const dbA = await openPostgres(url, { max: 2 });
    const dbB = await openPostgres(url, { max: 2 });
    await migrate(dbA);
    return { dbA, dbB, close: async () => void (await Promise.all([dbA.close(), dbB.close()])) };
  }

  it('two replicas list each other; a crashed one expires and is collected', async () => {
    const { dbA, dbB, close } = await twoReplicas();
    const a = registry(dbA, 'replica-a');
    const b = registry(dbB, 'replica-b');
    try {
      await a.start();
      await b.start();
      for (const r of [a, b]) {
        const live = await r.list();
        expect(live.map((x) => x.id).sort()).toEqual(['replica-a', 'replica-b']);
        expect(live.find((x) => x.id === 'replica-b')?.privateUrl).toBe('http://127.0.0.1:1/replica-b');
        for (const x of live) expect(x.leaseExpiresAt.getTime()).toBeGreaterThan(x.startedAt.getTime());
      }
      // Outlives several lease lifetimes only through renewal.
      const firstExpiry = (await a.list()).find((x) => x.id === 'replica-a')!.leaseExpiresAt.getTime();
      await eventually('the lease is renewed', async () => {
        const mine = (await b.list()).find((x) => x.id === 'replica-a');
        return mine !== undefined && mine.leaseExpiresAt.getTime() > firstExpiry;
      });

      await b.stop({ deregister: false }); // as if it crashed
      expect(await rowIds(dbA)).toContain('replica-b');
      await eventually('the crashed replica is no longer listed', async () => !(await a.list()).some((x) => x.id === 'replica-b'));
      await eventually('its row is collected', async () => !(await rowIds(dbA)).includes('replica-b'));
      expect((await a.list()).map((x) => x.id)).toEqual(['replica-a']);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      await close();
    }
  });

  it('a clean stop deletes the row at once', async () => {
    const { dbA, close } = await twoReplicas();
    const a = registry(dbA, 'replica-a', 60_000);
    try {
      await a.start();
      expect(await rowIds(dbA)).toEqual(['replica-a']);
      await a.stop();
      expect(await rowIds(dbA)).toEqual([]);
    } finally {
      await close();
    }
  });

  it('registers again after its expired row was collected', async () => {
    const { dbA, close } = await twoReplicas();
    const a = registry(dbA, 'replica-a');
    try {
      await a.start();
      await dbA.query('DELETE FROM replicas');
      expect(await listReplicas(dbA)).toEqual([]);
      await eventually('registered again', async () => (await listReplicas(dbA)).some((x) => x.id === 'replica-a'));
    } finally {
      await a.stop();
      await close();
    }
  });

  it('a renewal is one statement, which also removes the expired rows of others', async () => {
    const { dbA, dbB, close } = await twoReplicas();
    const sent: string[] = [];
    const counting: Database = {
      kind: dbA.kind,
      query: (text, params) => (sent.push(text), dbA.query(text, params)),
      transaction: (fn) => dbA.transaction(fn),
      listen: (channel, handlers) => dbA.listen(channel, handlers),
      close: () => dbA.close(),
    };
    const a = new ReplicaRegistry({ db: counting, id: 'replica-a', leaseTtlMs: 1000, renewIntervalMs: 100, logger });
    try {
      await a.start();
      await dbB.query(`INSERT INTO replicas (id, lease_expires_at) VALUES ('dead', now() - interval '1 second')`);
      sent.length = 0;
      await eventually('the dead row is removed', async () => !(await rowIds(dbB)).includes('dead'));
      await eventually('three more renewals', async () => sent.length >= 4);
      const renewals = sent.length;
      await delay(250);
      // Renewals only, each a single statement: nothing else runs between them.
      expect(sent.length).toBeGreaterThan(renewals);
      expect(new Set(sent).size).toBe(1);
    } finally {
      await a.stop();
      await close();
    }
  });

  it('aborting the start signal stops and deregisters', async () => {
    const { dbA, close } = await twoReplicas();
    const a = registry(dbA, 'replica-a', 60_000);
    const ctl = new AbortController();
    try {
      await a.start(ctl.signal);
      ctl.abort();
      await eventually('deregistered', async () => (await rowIds(dbA)).length === 0);
    } finally {
      await a.stop();
      await close();
    }
  });
});
