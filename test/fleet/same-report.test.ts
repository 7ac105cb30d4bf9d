import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DeviceStatusInput, PeerPath } from '../../src/protocol/index.js';
import { sameReport } from '../../src/server/fleet/same-report.js';

/** A value with every object's keys sorted, so that key order does not count. */
function sortedKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortedKeys);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, x]) => [k, sortedKeys(x)]));
}

/** The report as a value. */
function canonical(r: DeviceStatusInput): string {
  return JSON.stringify(sortedKeys(r));
}

const small = <T>(values: readonly T[]) => fc.constantFrom(...values);

const KEYS = ['ZmlD7bEoIf6dDG1Cv9D2zEz6CHgvJ0W5qFVxgK4C5n8=', 'Hh0K6x9T3+3qNQ3gU3b2Ho6q0nY3Vb1Y1kq9cHkY2Fs='];

/** One peer's path, and the same in another key order: senders' JSON may order them either way. */
const peerPath: fc.Arbitrary<PeerPath> = fc
  .record({
    public_key: small(KEYS),
    device_id: fc.option(small(['d1', 'd2']), { nil: null }),
    path: small(['direct', 'relay', 'none'] as const),
    via: fc.option(small(['server', 'device:d2']), { nil: null }),
    relay_id: fc.option(small(['r1']), { nil: null }),
    endpoint: fc.option(small(['198.51.100.1:51820', '198.51.100.2:51820']), { nil: null }),
    latest_handshake: fc.option(small(['2030-01-01T00:00:00.000Z', '2030-01-01T00:00:12.000Z']), { nil: null }),
    rx_bytes: small([0, 4096, 8192]),
    tx_bytes: small([0, 4096]),
  })
  .chain((p) => fc.shuffledSubarray(Object.keys(p), { minLength: 9 }).map((ks) => Object.fromEntries(ks.map((k) => [k, p[k as keyof PeerPath]])) as PeerPath));

const fields = {
  online: fc.boolean(),
  applied_revision: fc.option(small([1, 2, 3]), { nil: null }),
  apply_error: fc.option(small(['', 'boom', 'bang']), { nil: null }),
  local_endpoints: fc.array(small(['10.0.0.1:51820', '10.0.0.2:51820', '[fd00::1]:51820']), { maxLength: 3 }),
  os: fc.option(small(['linux', 'darwin']), { nil: null }),
  agent_version: fc.option(small(['1.0.0', '1.1.0']), { nil: null }),
  peers: fc.array(peerPath, { maxLength: 3 }),
  peers_truncated: fc.boolean(),
};
type Key = keyof typeof fields;

/** The same fields in another order, as senders' JSON may have them. */
function reordered(r: DeviceStatusInput): fc.Arbitrary<DeviceStatusInput> {
  const keys = Object.keys(r);
  return fc
    .shuffledSubarray(keys, { minLength: keys.length })
    .map((ks) => Object.fromEntries(ks.map((k) => [k, structuredClone(r[k as Key])])) as unknown as DeviceStatusInput);
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
        .chain((k) => (fields[k] as fc.Arbitrary<unknown>).map((v) => ({ ...a, [k]: v }) as DeviceStatusInput))
        .chain(reordered),
      reordered(Object.fromEntries(Object.entries(a).filter(([k]) => k !== 'online')) as unknown as DeviceStatusInput),
      // The same peers, each one's fields in the reverse order.
      reordered(a.peers === undefined ? a : { ...a, peers: a.peers.map((p) => Object.fromEntries(Object.entries(p).reverse()) as unknown as PeerPath) }),
      // One field of one peer changed (the bytes of a busy peer, most often).
      fc
        .tuple(peerPath, small(['rx_bytes', 'endpoint', 'path'] as const), fc.nat({ max: 2 }))
        .map(([p, field, at]): DeviceStatusInput => {
          const peers = [...(a.peers ?? [])];
          const i = peers.length === 0 ? 0 : at % peers.length;
          const base = peers[i] ?? p;
          peers[i] = { ...base, [field]: field === 'rx_bytes' ? base.rx_bytes + 1 : field === 'endpoint' ? null : 'relay' };
          return { ...a, peers };
        }),
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
