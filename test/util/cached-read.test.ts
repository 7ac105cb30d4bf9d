import { describe, expect, it } from 'vitest';
import { CachedRead } from '../../src/util/cached-read.js';

/** A read that counts its calls and resolves when told to. */
function controlledRead() {
  let calls = 0;
  const pending: { resolve: (v: number) => void; reject: (e: Error) => void }[] = [];
  const read = () => {
    calls++;
    return new Promise<number>((resolve, reject) => pending.push({ resolve, reject }));
  };
  return { read, calls: () => calls, pending };
}

describe('CachedRead', () => {
  it('shares a read in flight and reuses its value for ttlMs, then reads again', async () => {
    let now = 0;
    const r = controlledRead();
    const cache = new CachedRead(r.read, 5_000, () => now);
    const a = cache.get();
    const b = cache.get();
    expect(r.calls()).toBe(1);
    r.pending[0]?.resolve(7);
    expect(await Promise.all([a, b])).toEqual([7, 7]);
    now = 4_999;
    expect(await cache.get()).toBe(7);
    expect(r.calls()).toBe(1);
    now = 5_000;
    const c = cache.get();
    expect(r.calls()).toBe(2);
    r.pending[1]?.resolve(8);
    expect(await c).toBe(8);
  });

  it('does not keep a failed read', async () => {
    const r = controlledRead();
    const cache = new CachedRead(r.read, 5_000, () => 0);
    const a = cache.get();
    r.pending[0]?.reject(new Error('database down'));
    await expect(a).rejects.toThrow('database down');
    const b = cache.get();
    expect(r.calls()).toBe(2);
    r.pending[1]?.resolve(3);
    expect(await b).toBe(3);
  });
});
