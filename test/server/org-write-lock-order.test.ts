/**
 * Writes of one organization from two replicas never deadlock. A batch
 * (org-write.ts) locks its first write's object, then the organization's
 * row (its head revision), then its next write's object; another replica's
 * write that held that object and then needed the row made a deadlock,
 * PostgreSQL's 40P01 and a 500 (seen with three replicas on one database).
 * Every write now locks the row first. Two Database handles on one
 * PostgreSQL stand for two replicas: each has its own write queues.
 */
import { describe, expect, it } from 'vitest';
import { runAudited, SYSTEM_SCOPE } from '../../src/server/audit/index.js';
import { openPostgres, type Database, type Queryable } from '../../src/server/db/index.js';
import { writeInOrg } from '../../src/server/store/org-write.js';
import { pgAdminUrl, startTestServer } from './fixtures.js';

const lockObject = (tx: Queryable, id: string): Promise<unknown> => tx.query('SELECT 1 FROM objects WHERE id = $1 FOR UPDATE', [id]);

/** Resolves once some session of this database waits for a lock. */
async function someoneWaits(db: Database): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const rows = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
    if (Number(rows[0]?.n) > 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('no session waited for a lock');
}

describe.runIf(pgAdminUrl() !== '')('lock order of organization writes (PostgreSQL, two replicas)', () => {
  it('a batch on one replica and a write on another that hold each other\'s object both commit', () =>
    runAudited(SYSTEM_SCOPE, async () => {
      const server = await startTestServer('postgres');
      const url = server.ctx.settings.databaseUrl;
      if (url === undefined) throw new Error('the test server has no database URL');
      const other = await openPostgres(url);
      try {
        const { store } = server.ctx;
        const org = (await store.organizations.create({ name: 'lock-order' })).id;
        const g1 = (await store.securityGroups.create(org, { description: 'one' })).id;
        const g2 = (await store.securityGroups.create(org, { description: 'two' })).id;

        // Replica B: holds g2, and takes a revision once let go.
        let holding!: () => void;
        const held = new Promise<void>((r) => (holding = r));
        let letGoB!: () => void;
        const gateB = new Promise<void>((r) => (letGoB = r));
        const b = writeInOrg(other, store.bus, org, async (w) => {
          await lockObject(w.tx, g2);
          holding();
          await gateB;
          return w.revision();
        });
        await held;

        // Replica A: a first write runs alone while two queue behind it; those two then share a transaction, g1 then g2.
        let letGoA!: () => void;
        const gateA = new Promise<void>((r) => (letGoA = r));
        const first = writeInOrg(server.db, store.bus, org, () => gateA);
        const a1 = writeInOrg(server.db, store.bus, org, async (w) => {
          await lockObject(w.tx, g1);
          return w.revision();
        });
        const a2 = writeInOrg(server.db, store.bus, org, async (w) => {
          await lockObject(w.tx, g2);
          return w.revision();
        });
        letGoA();
        // A now waits on B (for the row, or for g2 while holding the row): then B goes on.
        await someoneWaits(other);
        letGoB();

        const outcomes = await Promise.allSettled([b, first, a1, a2]);
        expect(outcomes.map((o) => (o.status === 'fulfilled' ? 'ok' : String((o.reason as { code?: string }).code ?? o.reason)))).toEqual(['ok', 'ok', 'ok', 'ok']);
        const revisions = outcomes.slice(2).map((o) => (o.status === 'fulfilled' ? Number(o.value) : Number.NaN));
        expect(revisions[1]).toBe((revisions[0] ?? 0) + 1);
      } finally {
        await other.close();
        await server.close();
      }
    }));
});
