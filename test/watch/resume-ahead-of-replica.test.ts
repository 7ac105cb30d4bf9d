import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WatchKind } from '../../src/protocol/index.js';
import type { ChangeBatch } from '../../src/server/store/index.js';
import { openWatch, untilTails } from './support/watch-client.js';
import { eventually, startWatchServer, type WatchServer } from './support/watch-server.js';
import { patchGroup, revisionOf } from './support/objects.js';

/** Holds the tail cache's fills (reads that name no kinds) until released: the replica misses the changes meanwhile. */
class HeldFills {
  readonly held: (() => void)[] = [];
  holding = false;

  constructor(ws: WatchServer) {
    const store = ws.server.ctx.store;
    const real = store.changes.read;
    store.changes.read = async (orgId: string, after: number, limit: number, kinds?: readonly WatchKind[]): Promise<ChangeBatch> => {
      if (!kinds && this.holding) await new Promise<void>((resolve) => this.held.push(resolve));
      return real(orgId, after, limit, kinds);
    };
  }

  release(): void {
    this.holding = false;
    for (const r of this.held.splice(0)) r();
  }
}

describe('a resume that has seen more than this replica', () => {
  let ws: WatchServer;
  let fills: HeldFills;
  beforeAll(async () => {
    ws = await startWatchServer('pglite');
    fills = new HeldFills(ws);
  });
  afterAll(async () => {
    fills?.release();
    await ws?.close();
  });

  it('gets its tails only once the replica has read up to it: changes of other kinds come before them, never after', async () => {
    const org = (await ws.h.createOrg()).id;
    const group = await ws.h.createGroup(org);
    // A watcher keeps the organization's tail cache in memory.
    const keeper = await openWatch(ws.target(org), [{ kind: 'security-group' }]);
    await keeper.waitFor((e) => e.type === 'tail');
    const seen = await ws.h.head(org);

    // The replica misses two changes (as when its bus was down); the client saw the device's elsewhere.
    fills.holding = true;
    const changed = await patchGroup(ws.h, org, group.id, { description: 'changed while this replica was behind' });
    const device = await ws.h.createDevice(org);
    expect(device.revision).toBeGreaterThan(changed.revision);
    await eventually(() => fills.held.length > 0, 'the fill is held');

    const s = await openWatch(ws.target(org), [
      { kind: 'device', gt_revision: device.revision, at_tail: false },
      { kind: 'security-group', gt_revision: seen, at_tail: false },
    ]);
    await eventually(() => ws.server.watch.watcherCount === 2, 'the resume is registered');
    fills.release();
    await untilTails(s, 2);

    const lines = s.events.map((e) => `${e.type} ${e.type === 'bookmark' || e.type === 'error' ? '' : e.kind} ${revisionOf(e)}`);
    expect(lines.slice(0, 3)).toEqual([
      `change security-group ${changed.revision}`,
      `tail device ${device.revision}`,
      `tail security-group ${device.revision}`,
    ]);
    s.destroy();
    keeper.destroy();
  });

  it('a gt_revision above the database head still gets its tail at that revision', async () => {
    const org = (await ws.h.createOrg()).id;
    const keeper = await openWatch(ws.target(org), [{ kind: 'device' }]);
    await keeper.waitFor((e) => e.type === 'tail');
    const ahead = (await ws.h.head(org)) + 100;
    const s = await openWatch(ws.target(org), [{ kind: 'device', gt_revision: ahead }]);
    const tail = await s.waitFor((e) => e.type === 'tail');
    expect(revisionOf(tail)).toBe(ahead);
    s.destroy();
    keeper.destroy();
  });
});
