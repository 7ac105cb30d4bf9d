import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WATCH_KINDS } from '../../src/protocol/index.js';
import { openWatch } from './support/watch-client.js';
import { eventually, startWatchServer, type WatchServer } from './support/watch-server.js';
import { ResumingClient, plain, serverState } from './support/client-state.js';
import { burst, chunkBytes, openTracked } from './support/stall.js';

const LIMIT = 64 * 1024;
/** Events the tail cache keeps: fewer than the writes after the pause, so the stalled stream falls off it. */
const RING = 2;
/** Writes after the stalled watcher paused, to show its buffer stays put (each is a ~340 KB write to the database). */
const AFTER_PAUSE = RING + 2;
const ALL = WATCH_KINDS.map((kind) => ({ kind }));

describe('backpressure', () => {
  let ws: WatchServer;
  beforeAll(async () => {
    ws = await startWatchServer('pglite', { watchBufferLimit: LIMIT, tailCacheSize: RING, slowConsumerTimeout: 3600 });
  });
  afterAll(async () => {
    await ws.close();
  });

  it('a stream that stops reading blocks nobody, stays within its buffer limit, and catches up from the database', async () => {
    const org = (await ws.h.createOrg()).id;
    const stalled = await openTracked(ws, org, { paused: true });
    const readers = await Promise.all([0, 1, 2].map(() => openWatch(ws.target(org), ALL)));

    let sincePause = 0;
    const b = await burst(ws, org, stalled.watcher, () => stalled.watcher.paused && ++sincePause > AFTER_PAUSE);
    let { maxBuffered } = b;
    const { last } = b;
    // Every reader gets everything while the stalled stream is still stalled.
    await Promise.all(readers.map((r) => r.waitFor((e) => e.type === 'change' && e.value.id === last)));
    expect(stalled.watcher.paused).toBe(true);
    expect(stalled.watcher.closed).toBe(false);
    maxBuffered = Math.max(maxBuffered, stalled.watcher.buffered);

    const server = plain(await serverState(ws.h, org));
    const biggest = Math.max(...(readers[0]?.events ?? []).map(chunkBytes));
    expect(biggest).toBeGreaterThan(300_000);
    // Memory held for the stalled client: its buffer limit plus at most the one event that crossed it.
    expect(maxBuffered).toBeGreaterThan(LIMIT);
    expect(maxBuffered).toBeLessThanOrEqual(LIMIT + biggest);
    // ... while the burst was far larger than that.
    expect(b.writes * biggest).toBeGreaterThan(4 * (LIMIT + biggest));
    for (const r of readers) {
      const c = new ResumingClient('reader');
      c.startSession();
      for (const e of r.events) c.apply(e);
      expect(c.violations).toEqual([]);
      expect(plain(c.state)).toEqual(server);
      r.destroy();
    }

    // The stalled stream fell off the ring: once it reads again it catches up from the database.
    const catchUpsBefore = await ws.metric('fleetplane_watch_catchup_queries_total');
    stalled.stream.resume();
    await stalled.stream.waitFor((e) => e.type === 'change' && e.value.id === last, 20_000);
    expect(await ws.metric('fleetplane_watch_catchup_queries_total')).toBeGreaterThan(catchUpsBefore);
    const c = new ResumingClient('stalled');
    c.startSession();
    for (const e of stalled.stream.events) c.apply(e);
    expect(c.violations).toEqual([]);
    expect(plain(c.state)).toEqual(server);
    expect(stalled.watcher.paused).toBe(false);
    stalled.stream.destroy();
  });

  it('closes a stream stuck over its limit for the slow-consumer timeout', async () => {
    // Read when a stream opens: only the next stream gets the short timeout.
    ws.settings.slowConsumerTimeout = 0.3;
    const org = (await ws.h.createOrg()).id;
    const stalled = await openTracked(ws, org, { paused: true });
    ws.settings.slowConsumerTimeout = 3600;
    const reader = await openWatch(ws.target(org), ALL);
    const closesBefore = await ws.metric('fleetplane_watch_slow_consumer_closes_total');
    const { last } = await burst(ws, org, stalled.watcher, () => stalled.watcher.paused);
    expect(stalled.watcher.paused).toBe(true);
    await eventually(() => stalled.watcher.closed, 'the stalled watcher is closed');
    expect(await ws.metric('fleetplane_watch_slow_consumer_closes_total')).toBe(closesBefore + 1);
    expect(await ws.metric('fleetplane_watch_streams_ended_total', { reason: 'slow_consumer' })).toBe(1);
    expect(ws.server.watch.list()).not.toContain(stalled.watcher);
    // Its connection is gone: reading again finds the end.
    stalled.stream.resume();
    const end = await stalled.stream.ended;
    expect(end.complete).toBe(false);
    // The reading stream was not affected.
    await reader.waitFor((e) => e.type === 'change' && e.value.id === last);
    expect(reader.isEnded).toBe(false);
    reader.destroy();
  });
});
