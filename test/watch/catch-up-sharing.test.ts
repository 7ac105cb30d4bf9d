import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { WatchKind } from '../../src/protocol/index.js';
import type { ChangeBatch } from '../../src/server/store/index.js';
import { backends } from '../server/fixtures.js';
import { openWatch, type WatchStream } from './support/watch-client.js';
import { eventually, startWatchServer, type WatchServer } from './support/watch-server.js';
import { deleteDevice, ofType, revisionOf } from './support/objects.js';

const RESUMERS = 50;
const MISSED = 30;

/**
 * Holds the answers of catch-up reads (those that name kinds; tail cache
 * fills don't) after the database answered, until released: the read's
 * snapshot is taken, its result not yet delivered.
 */
class HeldReads {
  readonly held: (() => void)[] = [];
  holding = true;

  constructor(ws: WatchServer) {
    const store = ws.server.ctx.store;
    const real = store.changes.read;
    store.changes.read = async (orgId: string, after: number, limit: number, kinds?: readonly WatchKind[]): Promise<ChangeBatch> => {
      const batch = await real(orgId, after, limit, kinds);
      if (kinds && this.holding) await new Promise<void>((resolve) => this.held.push(resolve));
      return batch;
    };
  }

  release(): void {
    this.holding = false;
    for (const r of this.held.splice(0)) r();
  }
}

/** The devices a client holds after the events received so far, once its tail came. */
async function deviceIdsAtTail(stream: WatchStream): Promise<string[]> {
  await eventually(() => stream.events.some((e) => e.type === 'tail'), 'the tail');
  const ids = new Set<string>();
  for (const e of stream.events) {
    if (e.type === 'change' && e.kind === 'device') ids.add(e.value.id);
    if (e.type === 'delete' && e.kind === 'device') ids.delete(e.value.id);
  }
  return [...ids].sort();
}

describe.each(backends())('database catch-up reads shared between watchers on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    let ws: WatchServer;
    let reads: HeldReads;
    beforeAll(async () => {
      // Lists page the database here (no snapshot), as they do for an organization over the snapshot budget.
      ws = await startWatchServer(name, { snapshotBudget: 0 });
      reads = new HeldReads(ws);
    });
    afterAll(async () => {
      reads?.release();
      await ws?.close();
    });
    // A failed case must not leave held reads or open streams to the next.
    afterEach(async () => {
      reads.release();
      for (const w of ws.server.watch.list()) w.close(undefined, '');
      await eventually(() => ws.server.watch.watcherCount === 0, 'no stream is left');
    });

    it(`${RESUMERS} watchers resuming from the same revision behind the tail cache cost one query, and each gets every change`, async () => {
      reads.holding = true;
      const org = (await ws.h.createOrg()).id;
      const from = await ws.h.head(org);
      // Distinct objects: the database holds each object's latest version, so a catch-up sends one event per object.
      const revisions: number[] = [];
      for (let i = 0; i < MISSED; i++) revisions.push((await ws.h.createDevice(org)).revision);

      const before = await ws.metric('fleetplane_watch_catchup_queries_total');
      const resume = [{ kind: 'device' as const, gt_revision: from, at_tail: true }];
      const streams = await Promise.all(Array.from({ length: RESUMERS }, () => openWatch(ws.target(org), resume)));
      await eventually(() => ws.server.watch.watcherCount === RESUMERS, `${RESUMERS} watchers are registered`);
      await eventually(() => reads.held.length > 0, 'the catch-up read is held');
      expect(reads.held).toHaveLength(1);
      reads.release();

      for (const s of streams) {
        await s.waitFor((e) => e.type === 'change' && e.value.revision === revisions.at(-1));
        expect(ofType(s.events, 'change').map((e) => e.value.revision)).toEqual(revisions);
      }
      expect((await ws.metric('fleetplane_watch_catchup_queries_total')) - before).toBe(1);
      for (const s of streams) s.destroy();
      await eventually(() => ws.server.watch.watcherCount === 0, 'the streams are gone');
    });

    it('a resumer does not use a shared read older than a revision it already has', async () => {
      reads.holding = true;
      const org = (await ws.h.createOrg()).id;
      const from = await ws.h.head(org);
      const d1 = await ws.h.createDevice(org);
      // Streams that broke before their tails: the tails say up to where each kind is complete.
      const both = (device: number, group: number) => [
        { kind: 'device' as const, gt_revision: device },
        { kind: 'security-group' as const, gt_revision: group },
      ];
      // A's read has its snapshot (up to d1) and is held.
      const a = await openWatch(ws.target(org), both(from, from));
      await eventually(() => reads.held.length === 1, 'the first read is held');
      const d2 = await ws.h.createDevice(org);
      const g = await ws.h.createGroup(org, { description: 'seen elsewhere' });
      // B resumes from the same position but has seen the group already (revision g): A's snapshot is too old for it.
      const b = await openWatch(ws.target(org), both(from, g.revision));
      await eventually(() => ws.server.watch.watcherCount === 2, 'both resumers are registered');
      reads.release();

      await eventually(() => ofType(b.events, 'tail').length === 2 && ofType(b.events, 'change').some((e) => e.value.id === d2.id), 'B has d2 and both tails');
      const order = b.events.map((e) => (e.type === 'tail' ? `tail ${e.kind} ${revisionOf(e)}` : `${e.type} ${revisionOf(e)}`));
      // Everything before the tails, in order; each tail at or past what B already had.
      expect(order.slice(0, 2)).toEqual([`change ${d1.revision}`, `change ${d2.revision}`]);
      expect(order.slice(2).sort()).toEqual([`tail device ${g.revision}`, `tail security-group ${g.revision}`]);
      await a.waitFor((e) => e.type === 'change' && e.value.id === g.id);
      a.destroy();
      b.destroy();
      await eventually(() => ws.server.watch.watcherCount === 0, 'the streams are gone');
    });

    it('an initial list never shares a read older than its start: it would miss a delete', async () => {
      reads.holding = true;
      const org = (await ws.h.createOrg()).id;
      const doomed = (await ws.h.createDevice(org)).id;
      const kept = (await ws.h.createDevice(org)).id;
      const before = await ws.metric('fleetplane_watch_catchup_queries_total');
      const list = [{ kind: 'device' as const, gt_revision: 0 }];

      // The first list's read has its snapshot (both devices) and is held.
      const first = await openWatch(ws.target(org), list);
      await eventually(() => reads.held.length === 1, 'the first list read is held');
      await deleteDevice(ws.h, org, doomed);
      // The second list starts after the delete: the held snapshot is too old for it.
      const second = await openWatch(ws.target(org), list);
      await eventually(() => ws.server.watch.watcherCount === 2, 'both lists are registered');
      reads.release();

      expect(await deviceIdsAtTail(second)).toEqual([kept]);
      await first.waitFor((e) => e.type === 'delete' && e.value.id === doomed);
      expect(await deviceIdsAtTail(first)).toEqual([kept]);
      expect((await ws.metric('fleetplane_watch_catchup_queries_total')) - before).toBe(2);
      first.destroy();
      second.destroy();
    });
  });
});
