import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DeviceStatusInput } from '../../src/protocol/index.js';
import { sameReport } from '../../src/server/fleet/same-report.js';

/** The report as a value: keys sorted, so that key order does not count. */
function canonical(r: DeviceStatusInput): string {
  return JSON.stringify(Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : 1))));
}

const small = <T>(values: readonly T[]) => fc.constantFrom(...values);
const fields = {
  online: fc.boolean(),
  applied_revision: fc.option(small([1, 2, 3]), { nil: null }),
  apply_error: fc.option(small(['', 'boom', 'bang']), { nil: null }),
  local_endpoints: fc.array(small(['10.0.0.1:51820', '10.0.0.2:51820', '[fd00::1]:51820']), { maxLength: 3 }),
  os: fc.option(small(['linux', 'darwin']), { nil: null }),
  agent_version: fc.option(small(['1.0.0', '1.1.0']), { nil: null }),
};
type Key = keyof typeof fields;

/** The same fields in another order, as senders' JSON may have them. */
function reordered(r: DeviceStatusInput): fc.Arbitrary<DeviceStatusInput> {
  const keys = Object.keys(r);
  return fc.shuffledSubarray(keys, { minLength: keys.length }).map((ks) => Object.fromEntries(ks.map((k) => [k, structuredClone(r[k as Key])])) as DeviceStatusInput);
}

const report: fc.Arbitrary<DeviceStatusInput> = fc
  .record(fields, { requiredKeys: ['applied_revision', 'apply_error', 'local_endpoints', 'os', 'agent_version'] })
  .chain(reordered);

/** A report and another that is mostly like it: the same, one field set (or added) anew, or `online` dropped. */
const pair: fc.Arbitrary<[DeviceStatusInput, DeviceStatusInput]> = report.chain((a) =>
  fc.tuple(
    fc.constant(a),
    fc.oneof(
      reordered(a),
      fc
        .constantFrom(...(Object.keys(fields) as Key[]))
        .chain((k) => fields[k].map((v: unknown) => ({ ...a, [k]: v }) as DeviceStatusInput))
        .chain(reordered),
      reordered(Object.fromEntries(Object.entries(a).filter(([k]) => k !== 'online')) as DeviceStatusInput),
    ),
  ),
);

describe('sameReport', () => {
  it('holds exactly when two reports are equal as values, whatever their key order', () => {
    fc.assert(
      fc.property(pair, ([a, b]) => {
        expect(sameReport(a, b)).toBe(canonical(a) === canonical(b));
        expect(sameReport(a, structuredClone(a))).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });
});
