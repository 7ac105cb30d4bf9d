import { describe, expect, it } from 'vitest';
import { paths } from '../../src/protocol/index.js';
import { backends, errorCode, useServer, withServer, type Harness } from './fixtures.js';

async function orgRow(s: Harness, id: string): Promise<{ compacted: number; head: number } | undefined> {
  const rows = await s.server.db.query<{ compacted_revision: number; head_revision: number }>(
    'SELECT compacted_revision, head_revision FROM orgs WHERE id = $1',
    [id],
  );
  const r = rows[0];
  return r ? { compacted: Number(r.compacted_revision), head: Number(r.head_revision) } : undefined;
}

async function tombstones(s: Harness, orgId: string): Promise<number> {
  const rows = await s.server.db.query('SELECT 1 FROM objects WHERE org_id = $1 AND deleted', [orgId]);
  return rows.length;
}

describe.each(backends())('compaction on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);

    it('removes only tombstones older than the retention and records compacted_revision', async () => {
      const s = h();
      const org = await s.createOrg();
      const [a, b, c] = [await s.createDevice(org.id), await s.createDevice(org.id), await s.createDevice(org.id)];
      const g = await s.createGroup(org.id);
      await s.ok(204, 'DELETE', paths.device(org.id, a!.id));
      await s.ok(204, 'DELETE', paths.securityGroup(org.id, g.id));
      const lastDelete = await s.head(org.id);
      // Back-date the first delete: it is past a one-hour retention, the second is not.
      await s.server.db.query(`UPDATE objects SET changed_at = now() - interval '2 hours' WHERE id = $1`, [a!.id]);
      const first = await s.server.ctx.store.changes.compact(3600);
      expect(first.tombstones).toBe(1);
      expect(await tombstones(s, org.id)).toBe(1);
      const aDeletedAt = lastDelete - 1;
      expect((await orgRow(s, org.id))?.compacted).toBe(aDeletedAt);

      // Live objects are never compacted, however old.
      await s.server.db.query(`UPDATE objects SET changed_at = now() - interval '2 days' WHERE org_id = $1`, [org.id]);
      await s.server.ctx.store.changes.compact(3600);
      expect(await tombstones(s, org.id)).toBe(0);
      expect((await orgRow(s, org.id))?.compacted).toBe(lastDelete);
      const live = await s.ok<{ items: { id: string }[] }>(200, 'GET', paths.devices(org.id));
      expect(live.items.map((i) => i.id).sort()).toEqual([b!.id, c!.id].sort());

      const res = await s.call('GET', paths.devices(org.id), { token: s.admin, query: { gt_revision: String(lastDelete - 1) } });
      expect(res.statusCode).toBe(410);
      expect(errorCode(res)).toBe('revision_compacted');
      // compacted_revision never moves backwards, and a compaction with nothing to do changes nothing.
      expect((await s.server.ctx.store.changes.compact(0)).tombstones).toBe(0);
      expect((await orgRow(s, org.id))?.compacted).toBe(lastDelete);
    });

    it('compacts per organization', async () => {
      const s = h();
      const one = await s.createOrg();
      const two = await s.createOrg();
      const d1 = await s.createDevice(one.id);
      const d2 = await s.createDevice(two.id);
      await s.ok(204, 'DELETE', paths.device(one.id, d1.id));
      await s.ok(204, 'DELETE', paths.device(two.id, d2.id));
      await s.server.db.query(`UPDATE objects SET changed_at = now() - interval '2 hours' WHERE id = $1`, [d1.id]);
      await s.server.ctx.store.changes.compact(3600);
      expect((await orgRow(s, one.id))?.compacted).toBe(await s.head(one.id));
      expect((await orgRow(s, two.id))?.compacted).toBe(0);
      expect(await tombstones(s, two.id)).toBe(1);
    });

    it('drops a deleted organization and its revoked tokens once its tombstone is compacted', async () => {
      const s = h();
      const org = await s.createOrg();
      await s.createToken(org.id, 'read');
      await s.ok(204, 'DELETE', paths.organization(org.id));
      expect(await orgRow(s, org.id)).toBeDefined();
      await s.server.ctx.store.changes.compact(3600);
      expect(await orgRow(s, org.id)).toBeDefined();
      await s.server.ctx.store.changes.compact(0);
      expect(await orgRow(s, org.id)).toBeUndefined();
      const tokens = await s.server.db.query('SELECT 1 FROM tokens WHERE org_id = $1', [org.id]);
      expect(tokens).toHaveLength(0);
    });
  });
});

describe('the compaction job', () => {
  it('runs by itself with the configured retention and interval', async () => {
    await withServer(
      'pglite',
      async (s) => {
        const org = await s.createOrg();
        const d = await s.createDevice(org.id);
        await s.ok(204, 'DELETE', paths.device(org.id, d.id));
        const deletedAt = await s.head(org.id);
        let row = await orgRow(s, org.id);
        for (let i = 0; i < 200 && row?.compacted !== deletedAt; i++) {
          await new Promise((r) => setTimeout(r, 50));
          row = await orgRow(s, org.id);
        }
        expect(row?.compacted).toBe(deletedAt);
        expect(await tombstones(s, org.id)).toBe(0);
        const metrics = await s.call('GET', '/metrics');
        expect(metrics.body).toMatch(/^fleetplane_compacted_tombstones_total [1-9]/m);
      },
      { tombstoneRetention: 1, compactionInterval: 0.1 },
    );
  });
});
