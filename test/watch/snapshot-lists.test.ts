import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WATCH_KINDS, type WatchEvent } from '../../src/protocol/index.js';
import { LIST_HIGH_WATER } from '../../src/server/watch/watcher.js';
import { openWatch, watchRequest, type WatchStream } from './support/watch-client.js';
import { delay, eventually, startWatchServer, type WatchServer } from './support/watch-server.js';
import { ResumingClient, plain, serverState } from './support/client-state.js';
import { burst, chunkBytes, createBigGroup, openTracked } from './support/stall.js';
import { patchDevice } from './support/objects.js';

const ALL = WATCH_KINDS.map((kind) => ({ kind }));

function consistent(events: readonly WatchEvent[]): ResumingClient {
  const c = new ResumingClient('joiner');
  c.startSession();
  for (const e of events) c.apply(e);
  return c;
}

// One server for the tests whose settings it reads when it uses them (watchQueueLimit); the others start their own.
let ws: WatchServer;
beforeAll(async () => {
  ws = await startWatchServer('pglite', { slowConsumerTimeout: 3600 });
});
afterAll(async () => {
  await ws?.close();
});

let bigOrg: Promise<string> | undefined;
/** An organization of 17 big security groups (about 5.8 MB listed, more than a loopback send buffer takes), made once: the tests only list it. */
function bigOrgOnce(): Promise<string> {
  bigOrg ??= (async () => {
    const org = (await ws.h.createOrg()).id;
    for (let i = 0; i < 17; i++) await createBigGroup(ws, org, i);
    return org;
  })();
  return bigOrg;
}

/** Runs `fn` with the server's global queue limit at `bytes`, then puts it back. */
async function withQueueLimit<T>(bytes: number, fn: () => Promise<T>): Promise<T> {
  const before = ws.settings.watchQueueLimit;
  ws.settings.watchQueueLimit = bytes;
  try {
    return await fn();
  } finally {
    ws.settings.watchQueueLimit = before;
  }
}

describe('initial lists from the in-memory snapshot', () => {

  it('joiners after the first cost no database query, share the encoded objects, and end equal to the server', async () => {
    const org = (await ws.h.createOrg()).id;
    for (let i = 0; i < 30; i++) await ws.h.createDevice(org);
    await ws.h.createGroup(org);
    const first = await openWatch(ws.target(org), ALL);
    await first.waitFor((e) => e.type === 'tail' && e.kind === 'organization');
    const queries = await ws.server.ctx.metrics.queryCount();
    const fromSnapshot = await ws.metric('fleetplane_watch_lists_from_snapshot_total');
    const joiners: WatchStream[] = await Promise.all(Array.from({ length: 40 }, () => openWatch(ws.target(org), ALL)));
    for (const j of joiners) await j.waitFor((e) => e.type === 'tail' && e.kind === 'device');
    // Authentication reads the token once per request (the admin token is compared in memory): the lists themselves read nothing.
    expect(await ws.server.ctx.metrics.queryCount()).toBe(queries);
    expect(await ws.metric('fleetplane_watch_lists_from_snapshot_total')).toBe(fromSnapshot + 40);
    // Lists from memory take no admission turn.
    expect(await ws.metric('fleetplane_watch_list_admissions_total', { outcome: 'memory' })).toBeGreaterThanOrEqual(40);
    expect(ws.server.watch.admission.active).toBe(0);
    expect(await ws.metric('fleetplane_watch_snapshot_queries_total')).toBe(1);

    // A change after the lists reaches everyone once; their state equals the server's.
    const device = (await serverState(ws.h, org)).device.keys().next().value as string;
    const changed = await patchDevice(ws.h, org, device, { hostname: 'after-lists' });
    const server = plain(await serverState(ws.h, org));
    for (const j of [first, ...joiners]) {
      await j.waitFor((e) => e.type === 'change' && e.value.revision === changed.revision);
      const c = consistent(j.events);
      expect(c.violations).toEqual([]);
      expect(plain(c.state)).toEqual(server);
      j.destroy();
    }
  });

  it('300 stalled joiners on a 5 MB organization each hold at most the list high-water mark, and the objects are held once', async () => {
    // About 17 × 300 KB of security groups.
    const org = await bigOrgOnce();
    const reader = await openWatch(ws.target(org), ALL);
    await reader.waitFor((e) => e.type === 'tail' && e.kind === 'security-group');
    const biggest = Math.max(...reader.events.map(chunkBytes));
    const listBytes = reader.events.filter((e) => e.type === 'change').reduce((n, e) => n + chunkBytes(e), 0);
    expect(listBytes).toBeGreaterThan(5_000_000);
    const snapshotBytes = await ws.metric('fleetplane_watch_snapshot_bytes');
    // Listed once, each object's bytes are a view of its kind's list: held once, not once more for the list.
    expect(snapshotBytes).toBeLessThan(listBytes * 1.2);

    const closesBefore = await ws.metric('fleetplane_watch_slow_consumer_closes_total');
    const stalled = [];
    for (let i = 0; i < 300; i++) stalled.push(await openTracked(ws, org, { paused: true }));
    await delay(200);
    // Each also fills a kernel send buffer (up to 4 MiB on loopback): past its share of the host's TCP memory
    // pressure threshold, the kernel guard closes the longest stalled (test/watch/kernel-memory-guard.test.ts).
    const open = stalled.filter((s) => !s.watcher.closed);
    expect(await ws.metric('fleetplane_watch_slow_consumer_closes_total')).toBe(closesBefore + stalled.length - open.length);
    expect(open.length).toBeGreaterThan(0);
    let queued = 0;
    for (const s of open) {
      // What the server holds for a stalled joiner: references up to the high-water mark plus one event, never its whole list.
      expect(s.watcher.buffered).toBeLessThanOrEqual(LIST_HIGH_WATER + biggest);
      queued += s.watcher.buffered;
    }
    expect(queued).toBeLessThan(open.length * listBytes);
    // The organization's objects are in memory once, however many joiners list them.
    expect(await ws.metric('fleetplane_watch_snapshot_bytes')).toBe(snapshotBytes);
    expect(await ws.metric('fleetplane_watch_snapshot_queries_total')).toBeLessThanOrEqual(2);

    // A stalled joiner that reads again gets its whole list and ends equal to the server (one that was sent part of it:
    // the guard lets a stream whose client drains go on; the latest paused: it closes the longest paused first).
    const one = open.filter((s) => s.watcher.paused).at(-1) ?? open.at(-1)!;
    one.stream.resume();
    await one.stream.waitFor((e) => e.type === 'tail' && e.kind === 'security-group', 20_000);
    const c = consistent(one.stream.events);
    expect(c.violations).toEqual([]);
    expect(plain(c.state)).toEqual(plain(await serverState(ws.h, org)));
    for (const s of stalled) s.stream.destroy();
    reader.destroy();
    await eventually(() => ws.server.watch.watcherCount === 0, 'every stream is closed');
  });

  it('an organization over the snapshot budget lists from the database, with the same result', async () => {
    const small = await startWatchServer('pglite', { snapshotBudget: 1024 });
    try {
      const org = (await small.h.createOrg()).id;
      for (let i = 0; i < 10; i++) await small.h.createDevice(org);
      const s = await openWatch(small.target(org), ALL);
      await s.waitFor((e) => e.type === 'tail' && e.kind === 'security-group');
      expect(await small.metric('fleetplane_watch_lists_from_snapshot_total')).toBe(0);
      expect(await small.metric('fleetplane_watch_catchup_queries_total')).toBeGreaterThan(0);
      expect(await small.metric('fleetplane_watch_snapshot_bytes')).toBe(0);
      expect(plain(consistent(s.events).state)).toEqual(plain(await serverState(small.h, org)));
      s.destroy();
    } finally {
      await small.close();
    }
  });
});

describe('admission and the global queue bound', () => {
  it('lists paging the database beyond the concurrency bound wait, and past the wait get 503 with Retry-After', async () => {
    const ws = await startWatchServer('pglite', { maxConcurrentLists: 2, listQueueTimeout: 0.3, snapshotBudget: 0 });
    let release = (): void => undefined;
    try {
      const org = (await ws.h.createOrg()).id;
      const readChanges = ws.server.ctx.store.changes.read;
      // The lists' page reads hold the two turns until the refused and the resumed requests were answered.
      const held = new Promise<void>((resolve) => (release = resolve));
      ws.server.ctx.store.changes.read = async (...args) => {
        await held;
        return readChanges(...args);
      };
      const holding = [openWatch(ws.target(org), ALL), openWatch(ws.target(org), ALL)];
      await eventually(() => ws.server.watch.admission.active === 2, 'both lists hold a turn');
      const refused = await watchRequest(ws.target(org), ALL);
      expect(refused.status).toBe(503);
      expect(refused.code).toBe('unavailable');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      // A resume needs no list turn.
      const resumed = await openWatch(ws.target(org), WATCH_KINDS.map((kind) => ({ kind, gt_revision: 1, at_tail: true })));
      ws.server.ctx.store.changes.read = readChanges;
      release();
      for (const s of await Promise.all(holding)) {
        await s.waitFor((e) => e.type === 'tail' && e.kind === 'organization');
        s.destroy();
      }
      resumed.destroy();
      // The turns were given back: a new list is served at once.
      const later = await openWatch(ws.target(org), ALL);
      await later.waitFor((e) => e.type === 'tail' && e.kind === 'organization');
      later.destroy();
      expect(ws.server.watch.admission.active).toBe(0);
      expect(await ws.metric('fleetplane_watch_list_admissions_total', { outcome: 'refused' })).toBe(1);
    } finally {
      release();
      await ws.close();
    }
  });

  it('past the global queue limit, the watchers with the most queued are closed with slow_consumer', async () => {
    const org = (await ws.h.createOrg()).id;
    const stalled: Awaited<ReturnType<typeof openTracked>>[] = [];
    try {
      for (let i = 0; i < 6; i++) stalled.push(await openTracked(ws, org, { paused: true }));
      // Live changes, each written to every stalled watcher at once, until each has filled its kernel buffers and queued
      // past its buffer limit: bytes each holds alone (not views of the snapshot's lists).
      await burst(ws, org, stalled[0]!.watcher, () => stalled.every((s) => s.watcher.paused));
      expect(stalled.every((s) => s.watcher.paused)).toBe(true);
      const held = new Map(stalled.map((s) => [s, s.watcher.held]));
      expect([...held.values()].reduce((n, b) => n + b, 0)).toBeGreaterThan(600 * 1024);
      const closesBefore = await ws.metric('fleetplane_watch_slow_consumer_closes_total');
      // The engine reads the limit when it checks: lowered once every stalled watcher is in place.
      await withQueueLimit(600 * 1024, async () => ws.server.streams.checkQueue(true));
      const open = stalled.filter((s) => !s.watcher.closed);
      const closed = stalled.filter((s) => s.watcher.closed);
      const total = open.reduce((n, s) => n + s.watcher.held, 0);
      expect(total).toBeLessThanOrEqual(600 * 1024);
      expect(open.length).toBeLessThan(stalled.length);
      // Those closed held at least as much as any left open.
      const heldBy = (s: (typeof stalled)[number]): number => held.get(s) ?? 0;
      expect(Math.min(...closed.map(heldBy))).toBeGreaterThanOrEqual(Math.max(0, ...open.map(heldBy)));
      expect(await ws.metric('fleetplane_watch_slow_consumer_closes_total')).toBe(closesBefore + closed.length);
    } finally {
      // The server is shared: no stalled stream outlives the test.
      for (const s of stalled) s.stream.destroy();
    }
    await eventually(() => ws.server.watch.watcherCount === 0, 'every stream is closed');
  });

  it('views of the shared snapshot lists queued to stalled joiners do not count against the global limit', async () => {
    const org = await bigOrgOnce();
    const closesBefore = await ws.metric('fleetplane_watch_slow_consumer_closes_total');
    // The limit is low while they list: each pause checks the queue against it.
    await withQueueLimit(600 * 1024, async () => {
      const stalled: Awaited<ReturnType<typeof openTracked>>[] = [];
      try {
        for (let i = 0; i < 12; i++) stalled.push(await openTracked(ws, org, { paused: true }));
        ws.server.streams.checkQueue(true);
        // Far more than the limit is queued, but it is the snapshot's bytes, held once.
        expect(stalled.reduce((n, s) => n + s.watcher.buffered, 0)).toBeGreaterThan(600 * 1024);
        for (const s of stalled) {
          expect(s.watcher.closed).toBe(false);
          expect(s.watcher.held).toBeLessThan(4096);
        }
        expect(await ws.metric('fleetplane_watch_slow_consumer_closes_total')).toBe(closesBefore);
      } finally {
        for (const s of stalled) s.stream.destroy();
      }
      await eventually(() => ws.server.watch.watcherCount === 0, 'every stream is closed');
    });
  });
});
