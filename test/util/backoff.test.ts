import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Backoff, DEFAULT_BACKOFF } from '../../src/util/backoff.js';
import { sleep } from '../../src/util/sleep.js';

describe('Backoff (full jitter)', () => {
  it('draws the n-th delay uniformly under min(8 s, 0.5 s·2^n)', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 1, maxLength: 20 }), (draws) => {
        let i = 0;
        const b = new Backoff({}, () => draws[i++ % draws.length]!);
        draws.forEach((r, n) => {
          const ceiling = Math.min(8_000, 500 * 2 ** n);
          const d = b.next();
          expect(d).toBeGreaterThanOrEqual(0);
          expect(d).toBeLessThan(ceiling);
          expect(d).toBeCloseTo(r * ceiling, 6);
        });
      }),
    );
  });

  it('spans the whole range: 0 at the bottom, near the ceiling at the top', () => {
    const low = new Backoff({}, () => 0);
    const high = new Backoff({}, () => 0.999999);
    for (let n = 0; n < 10; n++) {
      expect(low.next()).toBe(0);
      expect(high.next()).toBeCloseTo(Math.min(8_000, 500 * 2 ** n) * 0.999999, 3);
    }
    expect(high.ceiling()).toBe(DEFAULT_BACKOFF.maxMs);
  });

  it('resets after a connection healthy for a minute, not before', () => {
    const b = new Backoff({}, () => 0.5);
    for (let n = 0; n < 6; n++) b.next(1_000);
    expect(b.failures).toBe(6);
    expect(b.next(59_999)).toBe(0.5 * Math.min(8_000, 500 * 2 ** 6));
    expect(b.next(60_000)).toBe(0.5 * 500);
    expect(b.failures).toBe(1);
  });

  it('stays finite after very many failures', () => {
    const b = new Backoff({}, () => 0.5);
    for (let n = 0; n < 5_000; n++) b.next();
    expect(b.next()).toBe(DEFAULT_BACKOFF.maxMs / 2);
  });

  it('sleep ends early on abort', async () => {
    const ac = new AbortController();
    const slept = sleep(60_000, ac.signal);
    ac.abort();
    expect(await slept).toBe(false);
    expect(await sleep(1)).toBe(true);
  });
});
