import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WATCH_KINDS } from '../../src/protocol/index.js';
import type { FleetServer } from '../../src/server/index.js';
import { startServerWithHooks } from '../../src/server/server.js';
import type { TcpConnection, TcpMemorySource } from '../../src/server/streams/index.js';
import { openWatch } from './support/watch-client.js';
import { eventually, WatchServer } from './support/watch-server.js';
import { ResumingClient, plain, serverState } from './support/client-state.js';
import { createBigGroup, openTracked } from './support/stall.js';

const ALL = WATCH_KINDS.map((kind) => ({ kind }));
/** The kernel's pressure threshold the test host reports, in pages: the guard's limit is half of it. */
const PRESSURE_PAGES = 1000;
const LIMIT_PAGES = PRESSURE_PAGES / 2;

/**
 * A host whose TCP memory the test sets: `room` pages under the guard's
 * limit (a burst of lists is stopped once it was handed that much), or past it.
 */
class TestHost implements TcpMemorySource {
  state: 'calm' | 'nearly' | 'past' = 'calm';
  server: FleetServer | undefined;
  pages(): number {
    return this.state === 'calm' ? 0 : this.state === 'nearly' ? LIMIT_PAGES - 10 : LIMIT_PAGES + 100;
  }
  pressurePages(): number {
    return PRESSURE_PAGES;
  }
  sendBufferMax(): number {
    return 4 * 1024 * 1024;
  }
  /** The streams still listing hold a full send buffer each: the memory past the limit is theirs. */
  sendQueues(): Promise<Map<TcpConnection, number>> {
    const queues = new Map<TcpConnection, number>();
    for (const w of this.server?.watch.list() ?? []) if (!w.caughtUp && w.connection !== undefined) queues.set(w.connection, this.sendBufferMax());
    return Promise.resolve(queues);
  }
}

describe('a list the kernel guard holds back', () => {
  const host = new TestHost();
  let ws: WatchServer;
  beforeAll(async () => {
    const server = await startServerWithHooks(
      {
        logLevel: 'silent',
        host: '127.0.0.1',
        port: 0,
        memory: true,
        safetyCheckInterval: 3600,
        revocationCheckInterval: 3600,
        compactionInterval: 3600,
        replicaLeaseTtl: 3600,
        busHelloInterval: 3600,
        // Bookmarks (and keepalives) looked at every 50 ms; a stream idle for 150 ms gets one.
        bookmarkInterval: 0.2,
        slowConsumerTimeout: 3600,
      },
      { listen: true },
      { tcpMemory: host },
    );
    host.server = server;
    ws = new WatchServer(server);
  });
  afterAll(async () => {
    await ws.close();
  });

  it('gets empty keepalive lines while it waits, never a bookmark before its tails, and its list intact once let go', async () => {
    const org = (await ws.h.createOrg()).id;
    // About 1.7 MB of security groups: several list slices.
    for (let i = 0; i < 5; i++) await createBigGroup(ws, org, i);

    // The organization's snapshot is built for the first watcher; joiners list from its shared buffers, slice by slice.
    const first = await openWatch(ws.target(org), ALL);
    await first.waitFor((e) => e.type === 'tail' && e.kind === 'security-group');
    host.state = 'nearly';
    const { stream, watcher } = await openTracked(ws, org, { paused: false });
    // The first slice went out; the next is held.
    await eventually(() => stream.bytes > 0, 'the first slice of the list arrives');
    host.state = 'past';
    await eventually(() => stream.keepalives >= 3, 'keepalive lines while the list is held', 10_000);
    expect(watcher.caughtUp).toBe(false);
    expect(stream.events.some((e) => e.type === 'tail' && e.kind === 'security-group')).toBe(false);
    // A keepalive between two chunks of a list cut mid-chunk would break the chunked framing and the line under it.
    expect(stream.badLines.length).toBe(0);
    expect(stream.isEnded).toBe(false);

    host.state = 'calm';
    await stream.waitFor((e) => e.type === 'tail' && e.kind === 'security-group', 20_000);
    expect(stream.badLines.length).toBe(0);
    const tails = stream.events.findIndex((e) => e.type === 'tail');
    expect(stream.events.slice(0, tails).some((e) => e.type === 'bookmark')).toBe(false);
    const c = new ResumingClient('held');
    c.startSession();
    for (const e of stream.events) c.apply(e);
    expect(c.violations).toEqual([]);
    expect(plain(c.state)).toEqual(plain(await serverState(ws.h, org)));
    stream.destroy();

    // A stream at its head gets bookmarks, not keepalives.
    await first.waitFor((e) => e.type === 'bookmark', 10_000);
    expect(first.keepalives).toBe(0);
    first.destroy();
    await eventually(() => ws.server.watch.watcherCount === 0, 'every stream is closed');
  });
});
