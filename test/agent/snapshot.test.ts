import { describe, expect, it } from 'vitest';
import { relistSnapshot } from '../../src/agent/index.js';
import { FleetplaneClient, UnavailableError, type FetchLike } from '../../src/client/index.js';
import { device, organization, securityGroup } from './dataplane/fixtures.js';

const ORG = organization().id;

/** A server whose head moves by the script: each list answers the next revision of `heads`. */
function fakeServer(script: { devices: number[]; groups: number[]; org: number[]; polls: boolean[] }) {
  const calls: string[] = [];
  const fetch: FetchLike = async (input, init) => {
    const url = new URL(input);
    const conditional = new Headers(init.headers).has('if-none-match');
    calls.push(`${url.pathname.split('/').at(-1)}${conditional ? '?' : ''}`);
    const json = (body: unknown, revision?: number) =>
      new Response(JSON.stringify(body), {
        status: 200,
        headers: { 'content-type': 'application/json', ...(revision === undefined ? {} : { 'x-fleetplane-revision': String(revision), etag: `"${revision}"` }) },
      });
    if (url.pathname.endsWith('/devices') && conditional) {
      return script.polls.shift() ? new Response(null, { status: 304, headers: { etag: '"x"' } }) : json({ items: [] }, 999);
    }
    if (url.pathname.endsWith('/devices')) return json({ items: [device(1)] }, script.devices.shift());
    if (url.pathname.endsWith('/security_groups')) return json({ items: [securityGroup(1, [])] }, script.groups.shift());
    return json({ ...organization(), revision: script.org.shift() });
  };
  return { client: new FleetplaneClient({ baseUrl: 'http://fake', token: 't', fetch }), calls };
}

describe('relistSnapshot', () => {
  it('returns the lists as one snapshot at the revision both lists carry, confirmed by a 304', async () => {
    const { client, calls } = fakeServer({ devices: [10], groups: [10], org: [4], polls: [true] });
    const s = await relistSnapshot(client, ORG);
    expect(s).toMatchObject({ revision: 10, source: 'relist' });
    expect(s.devices).toHaveLength(1);
    expect(s.securityGroups).toHaveLength(1);
    expect(calls).toEqual(['devices', 'security_groups', ORG, 'devices?']);
  });

  it('lists again while writes land in between (lists at different revisions, a newer organization, a moved head)', async () => {
    const { client, calls } = fakeServer({ devices: [10, 11, 12, 13], groups: [11, 11, 12, 13], org: [4, 13, 5], polls: [false, true] });
    const s = await relistSnapshot(client, ORG);
    expect(s.revision).toBe(13);
    expect(calls.filter((c) => c === 'devices')).toHaveLength(4);
  });

  it('gives up with UnavailableError when the organization never stands still', async () => {
    const { client } = fakeServer({ devices: [1, 2, 3, 4, 5], groups: [0, 0, 0, 0, 0], org: [], polls: [] });
    await expect(relistSnapshot(client, ORG)).rejects.toBeInstanceOf(UnavailableError);
  });
});
