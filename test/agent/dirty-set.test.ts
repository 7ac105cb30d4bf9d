import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DirtySet } from '../../src/agent/index.js';

type Sent = Array<Map<string, number>>;

function recorder(sent: Sent, fail: () => boolean = () => false) {
  return async (entries: ReadonlyMap<string, number>): Promise<void> => {
    sent.push(new Map(entries));
    if (fail()) throw new Error('send failed');
  };
}

describe('DirtySet', () => {
  it('coalesces marks of one key into its latest value, sent once', async () => {
    const set = new DirtySet<string, number>();
    const sent: Sent = [];
    set.mark('a', 1);
    set.mark('a', 2);
    set.mark('b', 7);
    expect(await set.flush(recorder(sent))).toBe(true);
    expect(sent).toEqual([new Map([['a', 2], ['b', 7]])]);
    expect(set.size).toBe(0);
    expect(await set.flush(recorder(sent))).toBe(false);
    expect(sent).toHaveLength(1);
  });

  it('retries a failed flush as a whole, with the newest values', async () => {
    const set = new DirtySet<string, number>();
    const sent: Sent = [];
    set.mark('a', 1);
    set.mark('b', 1);
    await expect(set.flush(recorder(sent, () => true))).rejects.toThrow('send failed');
    expect(set.size).toBe(2);
    set.mark('a', 2);
    await set.flush(recorder(sent));
    expect(sent).toEqual([new Map([['a', 1], ['b', 1]]), new Map([['a', 2], ['b', 1]])]);
    expect(set.size).toBe(0);
  });

  it('keeps a key marked again during a flush dirty, with its newer value', async () => {
    const set = new DirtySet<string, number>();
    const sent: Sent = [];
    set.mark('a', 1);
    await set.flush(async (entries) => {
      sent.push(new Map(entries));
      set.mark('a', 2);
    });
    expect(set.isDirty('a')).toBe(true);
    await set.flush(recorder(sent));
    expect(sent.map((m) => m.get('a'))).toEqual([1, 2]);
  });

  it('never sends a deleted key again: not pending, not after a failure, not on a later mark', async () => {
    const set = new DirtySet<string, number>();
    const sent: Sent = [];
    set.mark('gone', 1);
    set.mark('kept', 1);
    await expect(
      set.flush(async (entries) => {
        sent.push(new Map(entries));
        set.delete('gone');
        throw new Error('send failed');
      }),
    ).rejects.toThrow();
    expect(set.mark('gone', 2)).toBe(false);
    await set.flush(recorder(sent));
    expect(sent[1]).toEqual(new Map([['kept', 1]]));
    expect(set.isDeleted('gone')).toBe(true);
    set.delete('kept');
    expect(await set.flush(recorder(sent))).toBe(false);
  });

  it("doesn't overlap flushes", async () => {
    const set = new DirtySet<string, number>();
    set.mark('a', 1);
    let release!: () => void;
    const first = set.flush(() => new Promise<void>((r) => (release = r)));
    expect(await set.flush(async () => expect.unreachable())).toBe(false);
    release();
    expect(await first).toBe(true);
  });

  it('holds at most maxKeys dirty keys and remembers at most maxDeleted deletes', () => {
    const set = new DirtySet<string, number>({ maxKeys: 2, maxDeleted: 2 });
    set.mark('a', 1);
    set.mark('b', 1);
    set.mark('a', 2);
    expect(() => set.mark('c', 1)).toThrow(RangeError);
    set.delete('x');
    set.delete('y');
    set.delete('z');
    expect(set.isDeleted('x')).toBe(false);
    expect(set.isDeleted('z')).toBe(true);
  });

  it('property: whatever the interleaving, the last successful send of a key carries its last value, and nothing follows a delete', async () => {
    type Op = { t: 'mark'; k: number; v: number } | { t: 'delete'; k: number } | { t: 'flush'; fail: boolean };
    const op = fc.oneof(
      fc.record({ t: fc.constant('mark' as const), k: fc.integer({ min: 0, max: 3 }), v: fc.integer() }),
      fc.record({ t: fc.constant('delete' as const), k: fc.integer({ min: 0, max: 3 }) }),
      fc.record({ t: fc.constant('flush' as const), fail: fc.boolean() }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops: Op[]) => {
        const set = new DirtySet<number, number>();
        const last = new Map<number, number>();
        const deleted = new Set<number>();
        const delivered = new Map<number, number>();
        for (const o of ops) {
          if (o.t === 'mark') {
            if (set.mark(o.k, o.v)) last.set(o.k, o.v);
          } else if (o.t === 'delete') {
            set.delete(o.k);
            deleted.add(o.k);
          } else {
            await set
              .flush(async (entries) => {
                for (const k of entries.keys()) expect(deleted.has(k)).toBe(false);
                if (o.fail) throw new Error('x');
                for (const [k, v] of entries) delivered.set(k, v);
              })
              .catch(() => undefined);
          }
        }
        await set.flush(async (entries) => {
          for (const [k, v] of entries) delivered.set(k, v);
        });
        for (const [k, v] of last) if (!deleted.has(k)) expect(delivered.get(k)).toBe(v);
      }),
      { numRuns: 100 },
    );
  });
});
