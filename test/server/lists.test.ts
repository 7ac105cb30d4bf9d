import { describe, expect, it } from 'vitest';
import { HEADERS, paths, type Device, type Organization, type SecurityGroup } from '../../src/protocol/index.js';
import { backends, errorCode, prng, uniqueName, useServer, wgKey, type Harness, type InjectResponse } from './fixtures.js';

interface Tombstone {
  id: string;
  revision: number;
  deleted: true;
}
type Item = (Device | SecurityGroup | Tombstone) & { id: string; revision: number };
interface ListBody {
  items: Item[];
  next?: string;
}

const isTombstone = (i: Item): i is Tombstone => 'deleted' in i && i.deleted === true;

function revisionOf(res: InjectResponse): number {
  return Number(res.headers[HEADERS.revision]);
}

async function list(s: Harness, url: string, query: Record<string, string> = {}): Promise<{ res: InjectResponse; body: ListBody }> {
  const res = await s.call('GET', url, { token: s.admin, query });
  if (res.statusCode !== 200) throw new Error(`GET ${url}: ${res.statusCode} ${res.body}`);
  return { res, body: res.json() as ListBody };
}

/** Reads every page of a listing with `limit`, running `between(page)` concurrently with each page fetch. */
async function pageThrough(
  s: Harness,
  url: string,
  limit: number,
  between: (page: number) => Promise<void>,
): Promise<{ state: Map<string, Item>; lastRevision: number; pages: number }> {
  const state = new Map<string, Item>();
  let after: string | undefined;
  let lastRevision = 0;
  let pages = 0;
  for (;;) {
    const query: Record<string, string> = { limit: String(limit), ...(after ? { after } : {}) };
    const [{ res, body }] = await Promise.all([list(s, url, query), between(pages)]);
    pages++;
    expect(body.items.length).toBeLessThanOrEqual(limit);
    const revs = body.items.map((i) => i.revision);
    expect(revs).toEqual([...revs].sort((a, b) => a - b));
    for (const item of body.items) {
      if (isTombstone(item)) state.delete(item.id);
      else state.set(item.id, item);
    }
    lastRevision = revisionOf(res);
    if (body.next === undefined) break;
    after = body.next;
  }
  return { state, lastRevision, pages };
}

/** The server's live items, without status (status is observed state and changes no revision). */
async function serverState(s: Harness, url: string): Promise<Map<string, Item>> {
  const { body } = await list(s, url);
  return new Map(body.items.map((i) => [i.id, i]));
}

describe.each(backends())('lists on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);

    it('carry X-Fleetplane-Revision and ETag of the organization revision; If-None-Match gives 304 without a body', async () => {
      const s = h();
      const org = await s.createOrg();
      const d = await s.createDevice(org.id);
      for (const url of [paths.devices(org.id), paths.securityGroups(org.id)]) {
        const { res } = await list(s, url);
        const rev = revisionOf(res);
        expect(rev).toBe(d.revision);
        expect(res.headers[HEADERS.etag]).toBe(`"${rev}"`);
        const same = await s.call('GET', url, { token: s.admin, headers: { 'if-none-match': `"${rev}"` } });
        expect(same.statusCode).toBe(304);
        expect(same.body).toBe('');
        expect(same.headers[HEADERS.etag]).toBe(`"${rev}"`);
        const listed = await s.call('GET', url, { token: s.admin, headers: { 'if-none-match': `"${rev - 1}", "${rev}"` } });
        expect(listed.statusCode).toBe(304);
        const stale = await s.call('GET', url, { token: s.admin, headers: { 'if-none-match': `"${rev - 1}"` } });
        expect(stale.statusCode).toBe(200);
      }
      // Status reports don't change the revision: a poller still sees 304.
      await s.ok(200, 'PUT', paths.deviceStatus(org.id, d.id), {
        token: d.device_token,
        body: { applied_revision: d.revision, apply_error: null, local_endpoints: [], os: null, agent_version: null },
      });
      const still = await s.call('GET', paths.devices(org.id), { token: s.admin, headers: { 'if-none-match': `"${d.revision}"` } });
      expect(still.statusCode).toBe(304);
      // Any write in the organization does.
      await s.createGroup(org.id);
      const changed = await s.call('GET', paths.devices(org.id), { token: s.admin, headers: { 'if-none-match': `"${d.revision}"` } });
      expect(changed.statusCode).toBe(200);
      expect(changed.headers[HEADERS.etag]).toBe(`"${d.revision + 1}"`);
      // A read token polls the same way; another organization's token gets 404, not 304.
      const read = await s.createToken(org.id, 'read');
      expect((await s.call('GET', paths.devices(org.id), { token: read, headers: { 'if-none-match': `"${d.revision + 1}"` } })).statusCode).toBe(304);
      const other = await s.createOrg();
      const foreign = await s.createToken(other.id, 'admin');
      expect((await s.call('GET', paths.devices(org.id), { token: foreign, headers: { 'if-none-match': `"${d.revision + 1}"` } })).statusCode).toBe(404);
    });

    it('without paging parameters list every live item, with status, and no tombstones', async () => {
      const s = h();
      const org = await s.createOrg();
      const ds = await Promise.all([1, 2, 3].map(() => s.createDevice(org.id)));
      await s.ok(204, 'DELETE', paths.device(org.id, ds[1]!.id));
      const { body } = await list(s, paths.devices(org.id));
      expect(body.next).toBeUndefined();
      expect(body.items.map((i) => i.id).sort()).toEqual([ds[0]!.id, ds[2]!.id].sort());
      for (const item of body.items) expect((item as Device).status).toBeDefined();
    });

    it('gt_revision returns changed items and tombstones {id, revision, deleted: true}, in revision order', async () => {
      const s = h();
      const org = await s.createOrg();
      const [a, b, c] = [await s.createDevice(org.id), await s.createDevice(org.id), await s.createDevice(org.id)];
      const g = await s.createGroup(org.id);
      const mark = await s.head(org.id);
      const a2 = await s.ok<Device>(200, 'PATCH', paths.device(org.id, a!.id), { body: { hostname: 'renamed' } });
      await s.ok(204, 'DELETE', paths.device(org.id, b!.id));
      await s.ok(204, 'DELETE', paths.securityGroup(org.id, g.id));
      const { res, body } = await list(s, paths.devices(org.id), { gt_revision: String(mark) });
      expect(revisionOf(res)).toBe(mark + 3);
      expect(body.items).toHaveLength(2);
      expect(body.items[0]).toMatchObject({ id: a!.id, hostname: 'renamed', revision: a2.revision });
      expect(body.items[1]).toEqual({ id: b!.id, revision: mark + 2, deleted: true });
      expect(body.items.some((i) => i.id === c!.id)).toBe(false);
      const groups = await list(s, paths.securityGroups(org.id), { gt_revision: String(mark) });
      expect(groups.body.items).toEqual([{ id: g.id, revision: mark + 3, deleted: true }]);
      const none = await list(s, paths.devices(org.id), { gt_revision: String(mark + 3) });
      expect(none.body.items).toEqual([]);
    });

    it('paging with limit/after returns everything once, in revision order, with next until the last page', async () => {
      const s = h();
      const org = await s.createOrg();
      const created: string[] = [];
      for (let i = 0; i < 7; i++) created.push((await s.createDevice(org.id)).id);
      const seen: string[] = [];
      let after: string | undefined;
      let pages = 0;
      do {
        const { res, body } = await list(s, paths.devices(org.id), { limit: '3', ...(after ? { after } : {}) });
        expect(revisionOf(res)).toBeGreaterThan(0);
        seen.push(...body.items.map((i) => i.id));
        after = body.next;
        pages++;
      } while (after !== undefined);
      expect(pages).toBe(3);
      expect(seen).toEqual(created);
      // An exact multiple of the limit ends without an empty extra page.
      const exact = await list(s, paths.devices(org.id), { limit: '7' });
      expect(exact.body.items).toHaveLength(7);
      expect(exact.body.next).toBeUndefined();
    });

    it('410 revision_compacted below the compacted revision, for gt_revision and for cursors', async () => {
      const s = h();
      const org = await s.createOrg();
      const ds = [];
      for (let i = 0; i < 4; i++) ds.push(await s.createDevice(org.id));
      const before = await s.head(org.id);
      const firstPage = await list(s, paths.devices(org.id), { limit: '1' });
      expect(firstPage.body.next).toBeDefined();
      await s.ok(204, 'DELETE', paths.device(org.id, ds[0]!.id));
      await s.ok(204, 'DELETE', paths.device(org.id, ds[1]!.id));
      const deletedAt = await s.head(org.id);
      // A generous retention keeps fresh tombstones.
      expect((await s.server.ctx.store.changes.compact(3600)).tombstones).toBe(0);
      expect((await list(s, paths.devices(org.id), { gt_revision: String(before) })).body.items).toHaveLength(2);

      const result = await s.server.ctx.store.changes.compact(0);
      expect(result.tombstones).toBeGreaterThanOrEqual(2);
      const rows = await s.server.db.query<{ compacted_revision: number }>('SELECT compacted_revision FROM orgs WHERE id = $1', [org.id]);
      expect(Number(rows[0]?.compacted_revision)).toBe(deletedAt);
      const tombstones = await s.server.db.query('SELECT 1 FROM objects WHERE org_id = $1 AND deleted', [org.id]);
      expect(tombstones).toHaveLength(0);

      const stale: Record<string, string>[] = [{ gt_revision: String(before) }, { gt_revision: '1' }, { limit: '1', after: firstPage.body.next ?? '' }];
      for (const query of stale) {
        const res = await s.call('GET', paths.devices(org.id), { token: s.admin, query });
        expect(res.statusCode, JSON.stringify(query)).toBe(410);
        expect(errorCode(res)).toBe('revision_compacted');
      }
      // At or after the compacted revision, and a fresh listing, still work. gt_revision=0 is a fresh
      // listing too (the client has nothing to delete): sending it to "list again from 0" can't loop on 410.
      expect((await list(s, paths.devices(org.id), { gt_revision: String(deletedAt) })).body.items).toEqual([]);
      const fromZero = await list(s, paths.devices(org.id), { gt_revision: '0' });
      expect(fromZero.body.items.map((i) => i.id).sort()).toEqual([ds[2]!.id, ds[3]!.id].sort());
      expect((await list(s, paths.devices(org.id))).body.items).toHaveLength(2);
      expect((await list(s, paths.devices(org.id), { limit: '1' })).body.next).toBeDefined();
    });

    for (const seed of [1, 2, 3, 4]) {
      it(`the pagination promise holds while items are deleted, updated and created (seed ${seed})`, async () => {
        const s = h();
        const rnd = prng(seed * 7919);
        const org = await s.createOrg();
        const url = paths.devices(org.id);
        const live: string[] = [];
        const groups: string[] = [];
        for (let i = 0; i < 30; i++) live.push((await s.createDevice(org.id)).id);
        const pick = (xs: string[]): string | undefined => (xs.length === 0 ? undefined : xs[Math.floor(rnd() * xs.length)]);
        let deletes = 0;
        let updates = 0;

        async function mutate(): Promise<void> {
          const r = rnd();
          if (r < 0.35) {
            const id = pick(live);
            if (!id) return;
            live.splice(live.indexOf(id), 1);
            deletes++;
            await s.ok(204, 'DELETE', paths.device(org.id, id));
          } else if (r < 0.75) {
            const id = pick(live);
            if (!id) return;
            updates++;
            await s.ok(200, 'PATCH', paths.device(org.id, id), { body: { hostname: uniqueName('u'), relay: rnd() < 0.5 } });
          } else if (r < 0.9) {
            live.push((await s.createDevice(org.id, { public_key: wgKey() })).id);
          } else if (r < 0.95 || groups.length === 0) {
            groups.push((await s.createGroup(org.id)).id);
          } else {
            const g = groups.pop();
            if (g) await s.ok(204, 'DELETE', paths.securityGroup(org.id, g));
          }
        }

        const limit = 1 + Math.floor(rnd() * 4);
        let budget = 40;
        const result = await pageThrough(s, url, limit, async () => {
          // Some writes land between pages, some race the page being read.
          const n = Math.min(budget, Math.floor(rnd() * 4));
          budget -= n;
          const concurrent = rnd() < 0.5;
          if (concurrent) await Promise.all(Array.from({ length: n }, () => mutate()));
          else for (let i = 0; i < n; i++) await mutate();
        });
        expect(deletes + updates).toBeGreaterThan(0);
        expect(result.pages).toBeGreaterThan(1);

        // Writes racing the last page may have committed after its snapshot: the listing is
        // consistent with its last page's revision, so a poll from there must complete it.
        const state = result.state;
        const head = await s.head(org.id);
        if (result.lastRevision < head) {
          const { body } = await list(s, url, { gt_revision: String(result.lastRevision) });
          for (const item of body.items) {
            if (isTombstone(item)) state.delete(item.id);
            else state.set(item.id, item);
          }
        }
        const truth = await serverState(s, url);
        expect([...state.keys()].sort()).toEqual([...truth.keys()].sort());
        for (const [id, item] of truth) {
          expect(state.get(id)?.revision, id).toBe(item.revision);
          expect((state.get(id) as Device | undefined)?.hostname).toBe((item as Device).hostname);
        }
      });
    }

    it('GET /api/organizations lists live organizations', async () => {
      const s = h();
      const a: Organization = await s.createOrg();
      const b: Organization = await s.createOrg();
      await s.ok(204, 'DELETE', paths.organization(b.id));
      const body = await s.ok<{ items: Organization[] }>(200, 'GET', paths.organizations());
      const ids = body.items.map((o) => o.id);
      expect(ids).toContain(a.id);
      expect(ids).not.toContain(b.id);
    });
  });
});
