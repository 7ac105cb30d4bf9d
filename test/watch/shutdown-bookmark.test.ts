import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WATCH_KINDS } from '../../src/protocol/index.js';
import { openWatch, untilTails } from './support/watch-client.js';
import { eventually, startWatchServer, type WatchServer } from './support/watch-server.js';
import { ofType, patchDevice } from './support/objects.js';

const ALL = WATCH_KINDS.map((kind) => ({ kind }));

/**
 * A server that shuts down moves its streams' resume points to where they
 * are: a restarted server's ring starts at its head, and a kind that had no
 * event since an older revision would otherwise resume from the database.
 * Periodic bookmarks are off (the default for watch tests), so the only
 * bookmark a stream can get is the shutdown's.
 */
describe('shutdown bookmark', () => {
  let ws: WatchServer;
  beforeAll(async () => {
    // No snapshots: lists page the database, where a test can hold one.
    ws = await startWatchServer('pglite', { snapshotBudget: 0 });
  });
  afterAll(async () => {
    await ws.close();
  });

  it('sends a stream at its head a bookmark there before error unavailable; a stream still listing gets none', async () => {
    const org = await ws.h.createOrg();
    const devices = [await ws.h.createDevice(org.id), await ws.h.createDevice(org.id)];
    const atHead = await openWatch(ws.target(org.id), ALL);
    await untilTails(atHead, WATCH_KINDS.length);
    // One kind moves past the tails; the others' resume points stay behind, with nothing new for them.
    const patched = await patchDevice(ws.h, org.id, devices[0]!.id, { hostname: 'moved-on' });
    await atHead.waitFor((e) => e.type === 'change' && e.value.revision === patched.revision);

    // A list of another organization, held until the server stops.
    const other = await ws.h.createOrg();
    await ws.h.createDevice(other.id);
    const store = ws.server.ctx.store;
    const readChanges = store.changes.read;
    let release = (): void => undefined;
    const held = new Promise<void>((r) => (release = r));
    store.changes.read = async (orgId, after, limit, kinds) => {
      if (orgId === other.id && kinds !== undefined) await held;
      return readChanges(orgId, after, limit, kinds);
    };
    const listing = await openWatch(ws.target(other.id), ALL);
    await eventually(() => ws.server.watch.watcherCount === 2, 'both streams are open');

    const closed = ws.close();
    // Held until the stream owner has ended every stream: the list is still under way then.
    await eventually(() => ws.server.streams.closing, 'the streams are being ended');
    release();
    await closed;
    store.changes.read = readChanges;

    const rest = await atHead.rest(10_000);
    expect(rest).toEqual([
      { type: 'bookmark', value: { revision: patched.revision } },
      expect.objectContaining({ type: 'error', value: expect.objectContaining({ code: 'unavailable' }) }),
    ]);
    expect((await atHead.ended).complete).toBe(true);
    const listed = await listing.rest(10_000);
    expect(ofType(listed, 'bookmark')).toEqual([]);
    expect(listed.at(-1)).toMatchObject({ type: 'error', value: { code: 'unavailable' } });
  });
});
