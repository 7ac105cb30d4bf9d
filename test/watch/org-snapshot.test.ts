import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { WatchKind } from '../../src/protocol/index.js';
import type { CachedEvent } from '../../src/server/watch/event-ring.js';
import { OrgSnapshot, SNAPSHOT_OBJECT_OVERHEAD, SnapshotBudget } from '../../src/server/watch/org-snapshot.js';

const KIND: WatchKind = 'device';

function event(revision: number, id: string, deleted: boolean): CachedEvent {
  return { revision, kind: KIND, deleted, bytes: Buffer.from(deleted ? '' : `${id}@${revision}|`.repeat(1 + (revision % 5)), 'latin1') };
}

type Step = { op: 'set'; id: number } | { op: 'delete'; id: number } | { op: 'list' };

const steps = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant('set' as const), id: fc.integer({ min: 0, max: 7 }) }),
    fc.record({ op: fc.constant('delete' as const), id: fc.integer({ min: 0, max: 7 }) }),
    fc.record({ op: fc.constant('list' as const) }),
  ),
  { maxLength: 60 },
);

describe('OrgSnapshot', () => {
  it('lists the live objects in revision order, and charges each byte once: listed objects are views of their list', () => {
    fc.assert(
      fc.property(steps, (plan: Step[]) => {
        const budget = new SnapshotBudget(Number.MAX_SAFE_INTEGER);
        const snapshot = new OrgSnapshot(budget);
        // The model: live objects in revision order.
        const live = new Map<string, Buffer>();
        let revision = 0;
        let lastList: Buffer | undefined;
        for (const step of plan) {
          if (step.op === 'list') {
            const list = snapshot.list(KIND);
            expect(list.equals(Buffer.concat([...live.values()]))).toBe(true);
            // Between two changes, the same buffer for every caller.
            expect(snapshot.list(KIND)).toBe(list);
            // Everything is a view of this list now: its bytes once, plus each object's overhead.
            expect(snapshot.bytes).toBe(list.length + live.size * SNAPSHOT_OBJECT_OVERHEAD);
            lastList = list;
            continue;
          }
          const id = `o${step.id}`;
          const e = event(++revision, id, step.op === 'delete');
          expect(snapshot.apply(id, e)).toBe(true);
          live.delete(id);
          if (step.op === 'set') live.set(id, e.bytes);
          // A list still viewed stays charged; never more than it plus every object's own bytes.
          const own = [...live.values()].reduce((n, b) => n + b.length + SNAPSHOT_OBJECT_OVERHEAD, 0);
          expect(snapshot.bytes).toBeGreaterThanOrEqual(own);
          expect(snapshot.bytes).toBeLessThanOrEqual(own + (lastList?.length ?? 0));
          expect(budget.used).toBe(snapshot.bytes);
        }
        for (const id of [...live.keys()]) snapshot.apply(id, event(++revision, id, true));
        // Nothing live: nothing charged, lists included.
        expect(snapshot.bytes).toBe(0);
        expect(budget.used).toBe(0);
        expect(snapshot.list(KIND).length).toBe(0);
      }),
      { numRuns: 300 },
    );
  });

  it('serves a list over its budget without keeping it, and keeps charging its objects their own bytes', () => {
    const a = event(1, 'a', false);
    const b = event(2, 'b', false);
    const budget = new SnapshotBudget(a.bytes.length + b.bytes.length + 2 * SNAPSHOT_OBJECT_OVERHEAD);
    const snapshot = new OrgSnapshot(budget);
    expect(snapshot.apply('a', a)).toBe(true);
    expect(snapshot.apply('b', b)).toBe(true);
    const list = snapshot.list(KIND);
    expect(list.equals(Buffer.concat([a.bytes, b.bytes]))).toBe(true);
    expect(snapshot.list(KIND)).not.toBe(list);
    expect(budget.used).toBe(budget.limit);
    snapshot.release();
    expect(budget.used).toBe(0);
  });
});
