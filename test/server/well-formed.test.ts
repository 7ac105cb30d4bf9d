import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { findIllFormed, isWellFormed, locateIllFormed } from '../../src/server/http/well-formed.js';

/** Strings that are often ill-formed: NULs and lone surrogates among ordinary characters. */
const risky = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 6 }),
  fc.constantFrom('\0', '\ud800', '\udc00', 'a\ud83d', '\ude00b', '\ud83d\ude00', 'ok'),
);

const value = fc.letrec((tie) => ({
  any: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    risky,
    fc.oneof(fc.double(), fc.integer(), fc.constantFrom(Number.NaN, Infinity, -Infinity)),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('any'), { maxLength: 4 }),
    fc.dictionary(risky, tie('any'), { maxKeys: 4 }),
  ),
})).any;

function nested(depth: number): unknown {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { k: v };
  return v;
}

describe('well-formed input', () => {
  it('property: the allocation-free check agrees with the search for the ill-formed part', () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(isWellFormed(v)).toBe(locateIllFormed(v) === undefined);
        expect(findIllFormed(v)).toEqual(locateIllFormed(v));
      }),
      { numRuns: 2000 },
    );
  });

  it('agrees on nesting at and past the depth limit', () => {
    for (const depth of [63, 64, 65, 5000]) {
      const v = nested(depth);
      expect(isWellFormed(v), `depth ${depth}`).toBe(locateIllFormed(v) === undefined);
    }
    expect(isWellFormed(nested(64))).toBe(true);
    expect(isWellFormed(nested(65))).toBe(false);
  });
});
