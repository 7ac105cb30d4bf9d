import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../src/util/duration.js';
import { didYouMeanFlag, nearestName } from '../../src/util/nearest-name.js';

describe('parseDuration', () => {
  it.each([
    ['90', 90],
    ['0.25', 0.25],
    [' 30 ', 30],
    ['500ms', 0.5],
    ['30s', 30],
    ['10m', 600],
    ['1h', 3_600],
    ['1h30m', 5_400],
    ['1.5h', 5_400],
    ['7d', 604_800],
    ['2w', 1_209_600],
    ['1d12h', 129_600],
  ])('%s is %d seconds', (text, seconds) => {
    expect(parseDuration(text)).toBe(seconds);
  });

  it.each(['', '10x', 'm', '-5', '10 m', '1h 30m', '10m5', 'h1', '1e3', '0x10', '10mm'])('"%s" is no duration', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });

  it('reads back any sum of parts written with units', () => {
    const units = { ms: 0.001, s: 1, m: 60, h: 3_600, d: 86_400, w: 604_800 } as const;
    const part = fc.record({ n: fc.integer({ min: 0, max: 1_000 }), unit: fc.constantFrom(...(Object.keys(units) as (keyof typeof units)[])) });
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 4 }), (parts) => {
        const text = parts.map((p) => `${p.n}${p.unit}`).join('');
        const expected = parts.reduce((s, p) => s + p.n * units[p.unit], 0);
        expect(parseDuration(text)).toBeCloseTo(expected, 6);
      }),
    );
  });
});

describe('nearestName', () => {
  const flags = ['server', 'org', 'output', 'stale-after', 'status-interval', 'state-dir'];
  it('suggests the one name within a third of the typed length in edits', () => {
    expect(nearestName('sever', flags)).toBe('server');
    expect(nearestName('stale-aftr', flags)).toBe('stale-after');
    expect(nearestName('ouptut', flags)).toBe('output');
    expect(nearestName('og', flags)).toBe('org');
  });
  it('suggests nothing when no name is near, or two are as near', () => {
    expect(nearestName('colour', flags)).toBeUndefined();
    expect(nearestName('bogus', flags)).toBeUndefined();
    expect(nearestName('ab', ['ac', 'ad'])).toBeUndefined();
  });
  it('words a suggestion for a long flag only', () => {
    expect(didYouMeanFlag('--sever', flags)).toBe(' (did you mean --server?)');
    expect(didYouMeanFlag('--sever=x', flags)).toBe(' (did you mean --server?)');
    expect(didYouMeanFlag('-s', flags)).toBe('');
    expect(didYouMeanFlag('--colour', flags)).toBe('');
  });
});
