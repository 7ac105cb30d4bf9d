import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SignalBus, Subscription } from '../../src/server/bus/index.js';
import { openWatch } from './support/watch-client.js';
import { startWatchServer, type WatchServer } from './support/watch-server.js';
import { ResumingClient, plain, serverState } from './support/client-state.js';
import { deleteDevice, patchDevice } from './support/objects.js';

/** A bus that loses every signal: only the safety check can find changes. */
class DeafBus implements SignalBus {
  notified = 0;
  notify(): void {
    this.notified++;
  }
  notifyAll(): void {}
  subscribe(): Subscription {
    return { close() {} };
  }
  async notifyInTransaction(): Promise<boolean> {
    return false;
  }
  async close(): Promise<void> {}
}

describe('safety check', () => {
  let ws: WatchServer;
  const bus = new DeafBus();
  beforeAll(async () => {
    ws = await startWatchServer('pglite', { safetyCheckInterval: 0.1 }, { bus });
  });
  afterAll(async () => {
    await ws.close();
  });

  it('delivers every change although every signal is lost', async () => {
    const org = (await ws.h.createOrg()).id;
    const devices = [await ws.h.createDevice(org), await ws.h.createDevice(org)];
    const client = new ResumingClient('c');
    const s = await openWatch(ws.target(org), client.startSession());
    const notifiedBefore = bus.notified;

    const group = await ws.h.createGroup(org);
    for (let i = 0; i < 5; i++) await patchDevice(ws.h, org, devices[0]?.id ?? '', { hostname: `h${i}` });
    await deleteDevice(ws.h, org, devices[1]?.id ?? '');
    const head = await ws.h.head(org);
    expect(bus.notified - notifiedBefore).toBe(7);

    // The last write is the delete, at the head.
    await s.waitFor((e) => e.type === 'delete' && e.value.revision === head, 10_000);
    for (const e of s.events) client.apply(e);
    expect(client.atTail).toBe(true);
    expect(client.violations).toEqual([]);
    expect(plain(client.state)).toEqual(plain(await serverState(ws.h, org)));
    expect(client.state['security-group'].has(group.id)).toBe(true);
    expect(await ws.metric('fleetplane_watch_fill_queries_total')).toBeGreaterThan(0);
    s.destroy();
  });
});
