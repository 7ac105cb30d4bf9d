import { describe, expect, it } from 'vitest';
import { FleetplaneClient, collectList, type Device, type Tombstone } from '../../src/client/index.js';

interface Seen {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

/** A fetch that records requests and answers from a queue. */
function recorder(...answers: Array<() => Response>) {
  const seen: Seen[] = [];
  const fetch = async (input: string, init: RequestInit): Promise<Response> => {
    seen.push({
      method: init.method ?? 'GET',
      url: input,
      headers: Object.fromEntries(new Headers(init.headers).entries()),
      body: typeof init.body === 'string' ? JSON.parse(init.body) : undefined,
    });
    const next = answers.shift();
    if (!next) throw new Error('no answer queued');
    return next();
  };
  return { seen, client: new FleetplaneClient({ baseUrl: 'https://fleet.test/prefix/', token: 'tok', fetch }) };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => () =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
const empty = (status: number, headers: Record<string, string> = {}) => () => new Response(null, { status, headers });

const dev = (id: string, revision: number, hostname = id) => ({ id, revision, hostname }) as unknown as Device;

describe('REST calls', () => {
  it('sends the bearer token, keeps the base path and reads list headers', async () => {
    const { seen, client } = recorder(json(200, { items: [dev('a', 3)] }, { etag: '"7"', 'x-fleetplane-revision': '7' }));
    const page = await client.devices.list('org-1');
    expect(seen[0]).toMatchObject({ method: 'GET', url: 'https://fleet.test/prefix/api/organizations/org-1/devices' });
    expect(seen[0]!.headers['authorization']).toBe('Bearer tok');
    expect(page).toMatchObject({ items: [{ id: 'a' }], revision: 7, etag: '"7"', notModified: false });
  });

  it('polls with If-None-Match and reports not modified on 304', async () => {
    const { seen, client } = recorder(empty(304, { etag: '"7"' }), json(200, { items: [] }, { etag: '"8"' }));
    expect(await client.securityGroups.poll('o', 7)).toEqual({ notModified: true, etag: '"7"' });
    expect(seen[0]!.headers['if-none-match']).toBe('"7"');
    expect(await client.securityGroups.poll('o', '"7"')).toMatchObject({ notModified: false, etag: '"8"' });
  });

  it('sends If-Match on PATCH and DELETE', async () => {
    const { seen, client } = recorder(json(200, dev('a', 5)), empty(204));
    await client.devices.update('o', 'a', { hostname: 'h' }, { ifMatch: 4 });
    await client.devices.delete('o', 'a', { ifMatch: 5 });
    expect(seen.map((s) => [s.method, s.headers['if-match']])).toEqual([
      ['PATCH', '"4"'],
      ['DELETE', '"5"'],
    ]);
    expect(seen[0]!.body).toEqual({ hostname: 'h' });
    expect(seen[1]!.headers['if-match']).toBe('"5"');
  });

  it('pages through a list with the cursor to the end', async () => {
    const { seen, client } = recorder(
      json(200, { items: [dev('a', 1), dev('b', 2)], next: 'c1' }),
      json(200, { items: [{ id: 'a', revision: 3, deleted: true }, dev('c', 4)], next: 'c2' }),
      json(200, { items: [dev('b', 5, 'b2')] }),
    );
    const items: Array<Device | Tombstone> = [];
    for await (const item of client.devices.items('o', { limit: 2, gtRevision: 0 })) items.push(item);
    expect(seen.map((s) => new URL(s.url).search)).toEqual(['?gt_revision=0&limit=2', '?gt_revision=0&limit=2&after=c1', '?gt_revision=0&limit=2&after=c2']);
    expect(items.map((i) => `${i.id}@${i.revision}`)).toEqual(['a@1', 'b@2', 'a@3', 'c@4', 'b@5']);
    expect(collectList(items).map((d) => `${d.id}:${d.hostname}`)).toEqual(['c:c', 'b:b2']);
  });

  it('enrolls with the registration key as bearer token and returns device_token', async () => {
    const { seen, client } = recorder(json(201, { ...dev('d', 1), device_token: 'fpd_x' }));
    const enrolled = await client.devices.enroll('o', 'fpr_key', { hostname: 'h', public_key: 'k' });
    expect(seen[0]!.headers['authorization']).toBe('Bearer fpr_key');
    expect(enrolled.device_token).toBe('fpd_x');
  });

  it('creates organization tokens and registration keys', async () => {
    const { seen, client } = recorder(json(201, { id: 't', role: 'read', token: 'fpt_x' }), json(201, { id: 'k', key: 'fpr_x' }));
    expect((await client.tokens.create('o', { role: 'read', description: 'ci' })).token).toBe('fpt_x');
    expect((await client.registrationKeys.create('o', { single_use: true })).key).toBe('fpr_x');
    expect(seen.map((s) => [s.method, new URL(s.url).pathname, s.body])).toEqual([
      ['POST', '/prefix/api/organizations/o/tokens', { role: 'read', description: 'ci' }],
      ['POST', '/prefix/api/organizations/o/registration_keys', { single_use: true }],
    ]);
  });

  it('calls an agent method with wait', async () => {
    const { seen, client } = recorder(json(200, { pong: true, revision: 9 }));
    expect(await client.devices.rpc('o', 'd', 'force-sync', { x: 1 }, { wait: 5 })).toEqual({ pong: true, revision: 9 });
    expect(seen[0]).toMatchObject({ method: 'POST', url: 'https://fleet.test/prefix/api/organizations/o/devices/d/rpc/force-sync?wait=5', body: { x: 1 } });
  });

  it('puts status, reads convergence and replicas', async () => {
    const status = { online: true, applied_revision: 3, apply_error: null, local_endpoints: [], os: null, agent_version: null };
    const { seen, client } = recorder(json(200, status), json(200, { revision: 3, devices: 1, at_head: 1, behind: 0, error: 0, stale: 0, not_converged: [] }), json(200, { items: [{ id: 'r1' }] }));
    await client.devices.putStatus('o', 'd', status);
    expect((await client.convergence('o')).at_head).toBe(1);
    expect((await client.replicas()).map((r) => r.id)).toEqual(['r1']);
    expect(seen.map((s) => `${s.method} ${new URL(s.url).pathname}`)).toEqual([
      'PUT /prefix/api/organizations/o/devices/d/status',
      'GET /prefix/api/organizations/o/convergence',
      'GET /prefix/api/replicas',
    ]);
  });
});
