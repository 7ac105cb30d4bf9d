import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WATCH_KINDS, paths, type CreatedOrgToken, type WatchEvent } from '../../src/protocol/index.js';
import type { Store } from '../../src/server/store/index.js';
import { openWatch, untilTails, watchRequest, type WatchStream } from './support/watch-client.js';
import { delay, eventually, startWatchServer, type WatchServer } from './support/watch-server.js';
import { deleteDevice, ofType, patchDevice } from './support/objects.js';

const INTERVAL_S = 0.2;
const ALL = WATCH_KINDS.map((kind) => ({ kind }));

/** `p`, or a failure naming `what` when it takes longer than `ms`. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Reads a stream to its end; returns its events from the current read position. */
async function toEnd(s: WatchStream): Promise<{ rest: WatchEvent[]; complete: boolean }> {
  const rest = await s.rest(10_000);
  const end = await s.ended;
  return { rest, complete: end.complete };
}

/** Bookmarks, revocation and shutdown: what the server sends on its own, on one server. */
describe('stream lifecycle', () => {
  let ws: WatchServer;
  let store: Store;
  let readChanges: Store['changes']['read'];
  let readHeads: Store['changes']['heads'];
  const streams: WatchStream[] = [];
  beforeAll(async () => {
    // No snapshots: initial lists page the database, where a test can hold them (a list from memory is instant).
    ws = await startWatchServer('pglite', { bookmarkInterval: INTERVAL_S, revocationCheckInterval: 0.1, snapshotBudget: 0 });
    store = ws.server.ctx.store;
    readChanges = store.changes.read;
    readHeads = store.changes.heads;
  });
  afterEach(() => {
    store.changes.read = readChanges;
    store.changes.heads = readHeads;
    for (const s of streams.splice(0)) s.destroy();
  });
  afterAll(async () => {
    await ws.close();
  });

  describe('bookmarks', () => {
    it('sends bookmarks at the head on an idle stream, at least once per interval', async () => {
      const org = await ws.h.createOrg();
      const d = await ws.h.createDevice(org.id);
      const s = await openWatch(ws.target(org.id), ALL);
      streams.push(s);
      await untilTails(s, WATCH_KINDS.length);
      const head = await ws.h.head(org.id);

      // Ten intervals of silence: a count, with room for slow timers.
      const seen = s.events.length;
      await delay(INTERVAL_S * 10 * 1000);
      const idle = s.events.slice(seen);
      expect(idle.every((e) => e.type === 'bookmark')).toBe(true);
      expect(idle.length).toBeGreaterThanOrEqual(3);
      // Not one per check either (checks run four times per interval).
      expect(idle.length).toBeLessThanOrEqual(20);
      for (const b of ofType(idle, 'bookmark')) expect(b.value.revision).toBe(head);

      // After a change, bookmarks carry the new head.
      while (s.unread > 0) await s.next();
      const patched = await patchDevice(ws.h, org.id, d.id, { hostname: 'moved-on' });
      await s.waitFor((e) => e.type === 'change' && e.value.revision === patched.revision);
      const next = await s.waitFor((e) => e.type === 'bookmark', 5000);
      expect(next).toEqual({ type: 'bookmark', value: { revision: patched.revision } });
    });

    it('sends bookmarks to a stream resumed at the head with every tail seen', async () => {
      const org = await ws.h.createOrg();
      const head = await ws.h.head(org.id);
      const s = await openWatch(
        ws.target(org.id),
        WATCH_KINDS.map((kind) => ({ kind, gt_revision: head, at_tail: true })),
      );
      streams.push(s);
      const first = await s.next(5000);
      const second = await s.next(5000);
      expect([first, second]).toEqual([
        { type: 'bookmark', value: { revision: head } },
        { type: 'bookmark', value: { revision: head } },
      ]);
    });

    it('sends no bookmark before the tails, however long the initial list takes', async () => {
      const org = await ws.h.createOrg();
      for (let i = 0; i < 5; i++) await ws.h.createDevice(org.id);
      // Each catch-up read (the initial list) takes several bookmark intervals.
      store.changes.read = async (orgId, after, limit, kinds) => {
        if (kinds !== undefined) await delay(INTERVAL_S * 4 * 1000);
        return readChanges(orgId, after, limit, kinds);
      };
      const s = await openWatch(ws.target(org.id), ALL);
      streams.push(s);
      const events = await untilTails(s, WATCH_KINDS.length);
      expect(ofType(events, 'bookmark')).toEqual([]);
      expect(ofType(events, 'change')).toHaveLength(6);
      // Once at the tails, bookmarks flow.
      await s.waitFor((e) => e.type === 'bookmark', 5000);
    });
  });

  describe('revoked tokens', () => {
    it('deleting an organization token ends its streams with error forbidden; other streams go on', async () => {
      const org = await ws.h.createOrg();
      const d = await ws.h.createDevice(org.id);
      const created = await ws.h.ok<CreatedOrgToken>(201, 'POST', paths.tokens(org.id), { body: { role: 'read' } });
      const other = await ws.h.createToken(org.id, 'read');
      const revoked = [await openWatch(ws.target(org.id, created.token), ALL), await openWatch(ws.target(org.id, created.token), [{ kind: 'device' }])];
      const kept = [await openWatch(ws.target(org.id, other), ALL), await openWatch(ws.target(org.id), ALL)];
      for (const s of [...revoked, ...kept]) await untilTails(s, s === revoked[1] ? 1 : 3);

      await ws.h.ok(204, 'DELETE', paths.token(org.id, created.id));
      for (const s of revoked) {
        const { rest, complete } = await toEnd(s);
        expect(rest.at(-1)).toMatchObject({ type: 'error', value: { code: 'forbidden' } });
        expect(rest.filter((e) => e.type === 'error')).toHaveLength(1);
        expect(complete).toBe(true);
      }
      // The revoked token can't open a new stream either.
      expect((await watchRequest(ws.target(org.id, created.token), ALL)).status).toBe(401);

      const patched = await patchDevice(ws.h, org.id, d.id, { hostname: 'still-watched' });
      for (const s of kept) {
        await s.waitFor((e) => e.type === 'change' && e.value.revision === patched.revision);
        expect(s.isEnded).toBe(false);
        s.destroy();
      }
    });

    it("deleting a device ends its device token's streams with error forbidden", async () => {
      const org = await ws.h.createOrg();
      const device = await ws.h.createDevice(org.id);
      const s = await openWatch(ws.target(org.id, device.device_token), ALL);
      await untilTails(s, 3);
      const admin = await openWatch(ws.target(org.id), [{ kind: 'device' }]);
      await untilTails(admin, 1);

      await deleteDevice(ws.h, org.id, device.id);
      const { rest, complete } = await toEnd(s);
      expect(rest.at(-1)).toMatchObject({ type: 'error', value: { code: 'forbidden' } });
      expect(complete).toBe(true);
      // The admin's stream sees the delete and goes on.
      await admin.waitFor((e) => e.type === 'delete' && e.value.id === device.id);
      expect(admin.isEnded).toBe(false);
      admin.destroy();
    });
  });

  describe('shutdown', () => {
    // Last: it closes the server.
    it('sends error unavailable to every open stream and ends them', async () => {
      const org = await ws.h.createOrg();
      for (let i = 0; i < 3; i++) await ws.h.createDevice(org.id);
      const token = await ws.h.createToken(org.id, 'read');
      const all = await openWatch(ws.target(org.id), ALL);
      const devices = await openWatch(ws.target(org.id, token), [{ kind: 'device' }]);
      const atTail = await openWatch(ws.target(org.id), [{ kind: 'organization', gt_revision: 1, at_tail: true }]);
      const open = [all, devices, atTail];
      await untilTails(all, 3);
      await untilTails(devices, 1);
      await eventually(() => ws.server.watch.watcherCount === 3, 'three watchers are open');
      // One more request is still being prepared (its organization's cache is reading the head) when the server stops.
      const late = await ws.h.createOrg();
      store.changes.heads = async (ids) => {
        if (ids.includes(late.id)) await delay(400);
        return readHeads(ids);
      };
      const lateRequest = watchRequest(ws.target(late.id), ALL);
      await delay(100);
      await within(ws.close(), 10_000, 'the server to close');
      // Refused before streaming, as an ordinary error.
      expect((await lateRequest).status).toBe(503);
      for (const s of open) {
        const { rest, complete } = await toEnd(s);
        expect(rest.at(-1)).toMatchObject({ type: 'error', value: { code: 'unavailable' } });
        expect(rest.filter((e) => e.type === 'error')).toHaveLength(1);
        expect(complete).toBe(true);
      }
      expect(ws.server.watch.watcherCount).toBe(0);
      // No new streams once shut down.
      await expect(watchRequest(ws.target(org.id), ALL)).rejects.toThrow();
    });
  });
});
