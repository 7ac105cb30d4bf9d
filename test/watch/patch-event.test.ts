import { describe, expect, it } from 'vitest';
import { applyPatch, type PatchEvent } from '../../src/protocol/index.js';
import { encodeObjectEvent } from '../../src/server/watch/encode.js';
import { encodePatch } from '../../src/server/watch/patch-event.js';

const before = {
  id: 'd1',
  revision: 10,
  hostname: 'edge-1',
  endpoints: [{ source: 'local', address: '10.0.0.1:51820' }],
  advertise_cidrs: ['10.1.0.0/24', '10.2.0.0/24', '10.3.0.0/24'],
  public_key: 'kswdj8RzlgjLAqEBblfLUsV17oJ1uVT+eqPl3iXQUqs=',
  updated_at: '2026-11-28T10:00:00.000Z',
};
const after = { ...before, revision: 14, endpoints: [{ source: 'stun', address: '203.0.113.9:41641' }], updated_at: '2026-11-28T10:00:05.000Z' };
const previous = encodeObjectEvent('device', 'change', before);
const full = encodeObjectEvent('device', 'change', after).length;

/** The event a chunk carries. */
function lineOf(chunk: Buffer): PatchEvent {
  const text = chunk.toString('utf8');
  return JSON.parse(text.slice(text.indexOf('\r\n') + 2, -3)) as PatchEvent;
}

describe('a change encoded as a patch by the tail cache', () => {
  it('carries exactly the members that changed, from the revision the write replaced, and rebuilds the object', () => {
    const bytes = encodePatch('device', previous, after, 10, full);
    if (bytes === undefined) throw new Error('no patch');
    const e = lineOf(bytes);
    expect(e).toEqual({
      kind: 'device',
      type: 'patch',
      value: { revision: 14, from_revision: 10, id: 'd1', set: { endpoints: after.endpoints, updated_at: after.updated_at } },
    });
    expect(applyPatch(before, e.value)).toEqual(after);
    expect(bytes.length).toBeLessThan(full);
  });

  it('is not made from a copy older than the revision the write replaced (the fill read two writes as one)', () => {
    expect(encodePatch('device', previous, after, 12, full)).toBeUndefined();
    // Written before the revision was recorded.
    expect(encodePatch('device', previous, after, undefined, full)).toBeUndefined();
  });

  it('is not made when a member went away, or when it would not be smaller than the object', () => {
    const { advertise_cidrs: _gone, ...without } = after;
    expect(encodePatch('device', previous, without, 10, encodeObjectEvent('device', 'change', without).length)).toBeUndefined();
    const everything = { ...before, revision: 14, hostname: 'h'.repeat(40), endpoints: [], advertise_cidrs: [], public_key: 'x', updated_at: 'y' };
    expect(encodePatch('device', previous, everything, 10, encodeObjectEvent('device', 'change', everything).length)).toBeUndefined();
  });
});
