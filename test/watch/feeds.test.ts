import { request } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HEADERS, MEDIA, WATCH_KINDS, paths, type WatchEvent } from '../../src/protocol/index.js';
import type { Store } from '../../src/server/store/index.js';
import { openWatch, watchRequest, type WatchStream } from './support/watch-client.js';
import { delay, eventually, startWatchServer, type WatchServer } from './support/watch-server.js';
import { deleteDevice, patchDevice } from './support/objects.js';

const ALL: { kind: (typeof WATCH_KINDS)[number] }[] = WATCH_KINDS.map((kind) => ({ kind }));

async function tails(s: WatchStream, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await s.waitFor((e) => e.type === 'tail');
}

function isChangeOf(id: string, revision: number): (e: WatchEvent) => boolean {
  return (e) => e.type === 'change' && e.value.id === id && e.value.revision === revision;
}

describe('organization feeds (tail caches)', () => {
  let ws: WatchServer;
  let store: Store;
  let readLive: Store['changes']['live'];
  beforeAll(async () => {
    ws = await startWatchServer('pglite');
    store = ws.server.ctx.store;
    readLive = store.changes.live;
  });
  /** Streams to break after each test, whatever happened in it. */
  const streams: WatchStream[] = [];
  afterEach(() => {
    store.changes.live = readLive;
    for (const s of streams.splice(0)) s.destroy();
  });
  afterAll(async () => {
    await ws.close();
  });

  it('drops the cache of an organization once its last watcher is gone', async () => {
    const a = await ws.h.createOrg();
    const b = await ws.h.createOrg();
    const streams = [
      await openWatch(ws.target(a.id), ALL),
      await openWatch(ws.target(a.id), [{ kind: 'device' }]),
      await openWatch(ws.target(b.id), ALL),
    ];
    await eventually(() => ws.server.watch.watcherCount === 3, 'three watchers are open');
    expect(await ws.metric('fleetplane_watch_feeds')).toBe(2);
    expect(await ws.metric('fleetplane_watchers')).toBe(3);

    streams[0]?.destroy();
    await eventually(async () => (await ws.metric('fleetplane_watchers')) === 2, 'the first watcher is gone');
    // Organization a still has a watcher: its cache stays.
    expect(await ws.metric('fleetplane_watch_feeds')).toBe(2);

    streams[1]?.destroy(true);
    streams[2]?.destroy();
    await eventually(async () => (await ws.metric('fleetplane_watch_feeds')) === 0, 'every cache is dropped');
    expect(await ws.metric('fleetplane_watchers')).toBe(0);
    expect(ws.server.watch.list()).toEqual([]);
  });

  it('drops the cache made for a request refused before streaming', async () => {
    const org = await ws.h.createOrg();
    const d = await ws.h.createDevice(org.id);
    await deleteDevice(ws.h, org.id, d.id);
    await store.changes.compact(0);
    const refused = await watchRequest(ws.target(org.id), [{ kind: 'device', gt_revision: 1 }]);
    expect([refused.status, refused.code]).toEqual([410, 'revision_compacted']);
    const unknown = await watchRequest(ws.target('0d3c0a47-9b8e-4a55-8a0d-1f2e3d4c5b6a'), ALL);
    expect(unknown.status).toBe(404);
    await eventually(async () => (await ws.metric('fleetplane_watch_feeds')) === 0, 'the caches are dropped');
  });

  it('delivers a change committed while a new cache reads its head', async () => {
    const org = await ws.h.createOrg();
    const d = await ws.h.createDevice(org.id);
    const head = await ws.h.head(org.id);
    let patched: { revision: number } | undefined;
    // The head is read, then a write commits and signals before the cache has its ring.
    store.changes.live = async (id) => {
      const heads = await readLive(id);
      patched = await patchDevice(ws.h, org.id, d.id, { hostname: 'during-start' });
      await delay(20);
      return heads;
    };
    const s = await openWatch(ws.target(org.id), [{ kind: 'device', gt_revision: head, at_tail: true }]);
    streams.push(s);
    store.changes.live = readLive;
    expect(patched?.revision).toBe(head + 1);
    // No other write and no safety check (an hour away): only the signal can bring it.
    await s.waitFor(isChangeOf(d.id, head + 1), 5000, 'the change committed during the cache start');
    s.destroy();
  });

  it('keeps serving a watch that opened while another request on the organization was refused', async () => {
    const org = await ws.h.createOrg();
    const d = await ws.h.createDevice(org.id);
    await deleteDevice(ws.h, org.id, (await ws.h.createDevice(org.id)).id);
    await store.changes.compact(0);
    await eventually(async () => (await ws.metric('fleetplane_watch_feeds')) === 0, 'no cache is left');
    // Both requests wait for the same cache to start; the refused one (410) comes first.
    store.changes.live = async (id) => {
      await delay(300);
      return readLive(id);
    };
    const refused = watchRequest(ws.target(org.id), [{ kind: 'device', gt_revision: 1 }]);
    await delay(100);
    const opened = openWatch(ws.target(org.id), [{ kind: 'device' }]);
    expect((await refused).status).toBe(410);
    const s = await opened;
    streams.push(s);
    store.changes.live = readLive;
    await tails(s, 1);
    const patched = await patchDevice(ws.h, org.id, d.id, { hostname: 'after-refusal' });
    await s.waitFor(isChangeOf(d.id, patched.revision), 5000, 'a change after the refused request');
    expect(await ws.metric('fleetplane_watch_feeds')).toBe(1);
    s.destroy();
  });

  it('forgets a stream whose client left while the request was prepared', async () => {
    const org = await ws.h.createOrg();
    let prepared!: () => void;
    const preparing = new Promise<void>((r) => (prepared = r));
    store.changes.live = async (id) => {
      await delay(300);
      const heads = await readLive(id);
      prepared();
      return heads;
    };
    const req = request(new URL(paths.events(org.id), ws.url), {
      method: 'POST',
      agent: false,
      headers: { [HEADERS.contentType]: MEDIA.json, [HEADERS.authorization]: `Bearer ${ws.h.admin}` },
    });
    req.on('error', () => undefined);
    req.end(JSON.stringify(ALL));
    await delay(100);
    req.destroy();
    await preparing;
    await delay(100);
    expect(ws.server.watch.watcherCount).toBe(0);
    await eventually(async () => (await ws.metric('fleetplane_watch_feeds')) === 0, 'the cache is dropped');
  });
});
