/** Issue 13: `--audit-retention` deletes old entries, in batches, on one replica at a time. */
import { describe, expect, it } from 'vitest';
import { pruneAudit } from '../../../src/server/audit/index.js';
import { backends, useServer } from '../fixtures.js';

const OLD_LOCK = 7_317_420_083;

describe.each(backends())('audit retention on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);

    const seed = async (ages: readonly number[]) => {
      const db = h().server.db;
      await db.query('DELETE FROM audit_log');
      for (const [i, days] of ages.entries()) {
        await db.query(
          `INSERT INTO audit_log (org_id, at, actor_type, action, kind, object_id)
           VALUES (NULL, now() - make_interval(days => $1), 'system', 'create', 'device', $2)`,
          [days, `obj-${i}-${days}`],
        );
      }
    };
    const left = async () =>
      (await h().server.db.query<{ object_id: string }>('SELECT object_id FROM audit_log ORDER BY id')).map((r) => r.object_id);

    it('deletes what is older than the retention and nothing else, in bounded batches', async () => {
      await seed([100, 95, 91, 89, 10, 0, 120]);
      const round = await pruneAudit(h().server.db, 90 * 86_400, { batchSize: 2 });
      expect(round).toEqual({ deleted: 4, ran: true });
      expect(await left()).toEqual(['obj-3-89', 'obj-4-10', 'obj-5-0']);
      // A round stops after maxBatches; the next one goes on.
      await seed([100, 100, 100, 100, 100]);
      expect(await pruneAudit(h().server.db, 86_400, { batchSize: 2, maxBatches: 1 })).toEqual({ deleted: 2, ran: true });
      expect((await left()).length).toBe(3);
    });

    it('0 keeps everything', async () => {
      await seed([1000, 5]);
      expect(await pruneAudit(h().server.db, 0)).toEqual({ deleted: 0, ran: true });
      expect((await left()).length).toBe(2);
    });

    it.runIf(name === 'postgres')('a replica whose lock try fails deletes nothing (another one holds the round)', async () => {
      await seed([100, 100]);
      const db = h().server.db;
      const round = await db.transaction(async (tx) => {
        await tx.query('SELECT pg_advisory_xact_lock($1)', [OLD_LOCK]);
        return pruneAudit(db, 86_400);
      });
      expect(round).toEqual({ deleted: 0, ran: false });
      expect((await left()).length).toBe(2);
      expect(await pruneAudit(db, 86_400)).toEqual({ deleted: 2, ran: true });
    });
  });
});
