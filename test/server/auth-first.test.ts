/**
 * Issue 12, "Authentication first": who may make a call is settled before
 * anything the call sent is looked at, on every route. The routes come from
 * the OpenAPI document, so a route added later is in the table too.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { paths, type Organization } from '../../src/protocol/index.js';
import { errorCode, useServer, wgKey, type Harness, type InjectResponse, type Method } from './fixtures.js';
import { fetchDocument, type Operation } from './support/openapi-document.js';

interface Route {
  method: Method;
  /** The OpenAPI path template, e.g. `/api/organizations/{org}/devices/{id}`. */
  template: string;
}

/** Every operation a bearer token is needed for (the document's own `security: []` ones are public). */
async function protectedRoutes(h: Harness): Promise<Route[]> {
  const doc = await fetchDocument(h);
  return Object.entries(doc.paths).flatMap(([template, ops]) =>
    Object.entries(ops as Record<string, Operation & { security?: unknown[] }>)
      .filter(([, op]) => op.security === undefined || op.security.length > 0)
      .map(([method]): Route => ({ method: method.toUpperCase() as Method, template })),
  );
}

/**
 * A request to `route` that is wrong everywhere it can be: a path id that is
 * no UUID, an agent method outside the pattern, an unknown and infinite query
 * parameter, a body that matches no schema. Only who sends it decides the answer.
 */
function invalidCall(h: Harness, route: Route, org: string, token: string | undefined): Promise<InjectResponse> {
  const url = route.template
    .replace('{org}', org)
    .replace('{id}', 'not-a-uuid')
    .replace('{method}', encodeURIComponent('Not A Method!'));
  const body = route.method === 'GET' || route.method === 'DELETE' ? undefined : { bogus: true, hostname: 42, role: 'root', kind: 'nothing' };
  return h.call(route.method, `${url}?bogus=Infinity&wait=Infinity&limit=1e400`, { token, body });
}

const label = (r: Route): string => `${r.method} ${r.template}`;

describe('authentication and authorization come before validation (PGlite)', () => {
  const h = useServer('pglite');
  let routes: Route[];
  let orgA: Organization;
  let deviceId: string;
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    const s = h();
    routes = await protectedRoutes(s);
    orgA = await s.createOrg();
    const orgB = await s.createOrg();
    const once = await s.createRegKey(orgA.id, { single_use: true });
    await s.createDevice(orgA.id, {}, once.key);
    const expired = await s.createRegKey(orgA.id, { expires_at: new Date(Date.now() - 60_000).toISOString() });
    const device = await s.createDevice(orgA.id);
    deviceId = device.id;
    Object.assign(tokens, {
      usedUpKey: once.key,
      expiredKey: expired.key,
      reusableKey: (await s.createRegKey(orgA.id)).key,
      orgRead: await s.createToken(orgA.id, 'read'),
      otherOrgAdmin: await s.createToken(orgB.id, 'admin'),
      device: device.device_token,
    });
  });

  it('the table covers every protected route, the agent call and the streams included', () => {
    const names = routes.map(label);
    expect(names).toContain('POST /api/organizations/{org}/devices/{id}/rpc/{method}');
    expect(names).toContain('POST /api/organizations/{org}/events');
    expect(names).toContain('PUT /api/organizations/{org}/devices/{id}/status');
    expect(names).toContain('GET /api/agent/tunnel');
    expect(routes.length).toBeGreaterThan(20);
  });

  // Fix: the agent call (and the tunnel's plain GET) authenticate in onRequest like every other route.
  // Fix: a used-up or expired registration key resolves to no principal, so it is 401 on every route.
  for (const who of ['no token', 'an unknown token', 'a used-up registration key', 'an expired registration key'] as const) {
    it(`${who} with an invalid request gets 401 on every route`, async () => {
      const token = {
        'no token': undefined,
        'an unknown token': 'fpt_this-token-was-never-issued',
        'a used-up registration key': tokens['usedUpKey'],
        'an expired registration key': tokens['expiredKey'],
      }[who];
      const got: Record<string, string> = {};
      for (const route of routes) {
        const res = await invalidCall(h(), route, orgA.id, token);
        got[label(route)] = `${res.statusCode} ${errorCode(res) ?? res.body}`;
      }
      expect(got).toEqual(Object.fromEntries(routes.map((r) => [label(r), '401 unauthorized'])));
    });
  }

  // Fix: authorization runs in onRequest too; an organization route needs read access to the organization in its path first.
  it("another organization's token with an invalid request gets 404 on every organization route", async () => {
    const orgRoutes = routes.filter((r) => r.template.includes('{org}'));
    const got: Record<string, string> = {};
    for (const route of orgRoutes) {
      const res = await invalidCall(h(), route, orgA.id, tokens['otherOrgAdmin']);
      got[label(route)] = `${res.statusCode} ${errorCode(res) ?? res.body}`;
    }
    expect(got).toEqual(Object.fromEntries(orgRoutes.map((r) => [label(r), '404 not_found'])));
  });

  it('a registration key with an invalid request gets 403 wherever it may not go, and validation only where it enrolls', async () => {
    const enroll = label({ method: 'POST', template: '/api/organizations/{org}/devices' });
    const own = label({ method: 'GET', template: '/api/registration_key' });
    const tested = routes.filter((r) => label(r) !== own);
    const got: Record<string, string> = {};
    for (const route of tested) {
      const res = await invalidCall(h(), route, orgA.id, tokens['reusableKey']);
      got[label(route)] = `${res.statusCode} ${errorCode(res) ?? res.body}`;
    }
    const expected = Object.fromEntries(tested.map((r) => [label(r), '403 forbidden']));
    expected[enroll] = '400 validation_failed';
    // Not an upgrade: the tunnel's plain GET says so to any authenticated caller.
    expected['GET /api/agent/tunnel'] = '400 bad_request';
    expect(got).toEqual(expected);
  });

  const WRITES: { name: string; call: (org: string, deviceId: string) => [Method, string, unknown] }[] = [
    { name: 'PATCH organization', call: (org) => ['PATCH', paths.organization(org), { name: 42 }] },
    { name: 'POST devices', call: (org) => ['POST', paths.devices(org), { hostname: '', public_key: 'nope' }] },
    { name: 'PATCH device', call: (org, id) => ['PATCH', paths.device(org, id), { relay: 'yes' }] },
    { name: 'DELETE device', call: (org) => ['DELETE', `${paths.device(org, 'not-a-uuid')}?bogus=1`, undefined] },
    { name: 'POST security groups', call: (org) => ['POST', paths.securityGroups(org), { inbound_rules: 'all' }] },
    { name: 'PATCH security group', call: (org) => ['PATCH', paths.securityGroup(org, randomUUID()), { description: 7 }] },
    { name: 'POST tokens', call: (org) => ['POST', paths.tokens(org), { role: 'root' }] },
    { name: 'DELETE token', call: (org) => ['DELETE', paths.token(org, 'not-a-uuid'), undefined] },
    { name: 'POST registration keys', call: (org) => ['POST', paths.registrationKeys(org), { single_use: 'yes' }] },
    { name: 'agent call force-sync', call: (org, id) => ['POST', `${paths.deviceRpc(org, id, 'force-sync')}?wait=Infinity`, { x: 1 }] },
  ];

  // Fix: write access is checked in onRequest (writeOrgInPath), not in the handler after validation.
  for (const w of WRITES) {
    it(`${w.name}: a read token with an invalid request gets 403`, async () => {
      const [method, url, body] = w.call(orgA.id, deviceId);
      const res = await h().call(method, url, { token: tokens['orgRead'], body });
      expect([res.statusCode, errorCode(res)], res.body).toEqual([403, 'forbidden']);
    });
  }

  // Fix: the device-token checks run in onRequest (its own device) and preValidation (its own fields).
  it('a device token gets 403 for another device and for a field it may not set, however invalid the body', async () => {
    const s = h();
    const other = await s.createDevice(orgA.id);
    const device = tokens['device'];
    const cases: [string, unknown][] = [
      [paths.device(orgA.id, other.id), { hostname: 42 }],
      [paths.device(orgA.id, deviceId), { relay: 'yes' }],
      [paths.device(orgA.id, deviceId), { public_key: 7 }],
    ];
    for (const [url, body] of cases) {
      const res = await s.call('PATCH', url, { token: device, body });
      expect([res.statusCode, errorCode(res)], `${url} ${JSON.stringify(body)}: ${res.body}`).toEqual([403, 'forbidden']);
    }
    // Its own fields are still validated.
    const own = await s.call('PATCH', paths.device(orgA.id, deviceId), { token: device, body: { hostname: 42 } });
    expect([own.statusCode, errorCode(own)]).toEqual([400, 'validation_failed']);
  });

  // Fix: only-the-device-itself is decided in the status route's onRequest (fleet/routes.ts), not in its handler after validation.
  it("a device's status: any caller but the device itself gets 403 however invalid the body, the admin token included", async () => {
    const s = h();
    const other = await s.createDevice(orgA.id);
    const callers: [string, string][] = [
      ['the admin token', s.admin],
      ['an organization admin token', await s.createToken(orgA.id, 'admin')],
      ['a read token', tokens['orgRead']!],
      ['another device', other.device_token],
    ];
    for (const body of [{ applied_revision: 'x', bogus: true }, { apply_error: 'a\u0000b' }]) {
      for (const [who, token] of callers) {
        const res = await s.call('PUT', paths.deviceStatus(orgA.id, deviceId), { token, body });
        expect([res.statusCode, errorCode(res)], `${who} ${JSON.stringify(body)}: ${res.body}`).toEqual([403, 'forbidden']);
      }
    }
    // The device itself is still told what is wrong with its body.
    const own = await s.call('PUT', paths.deviceStatus(orgA.id, deviceId), { token: tokens['device'], body: { applied_revision: 'x' } });
    expect([own.statusCode, errorCode(own)]).toEqual([400, 'validation_failed']);
  });

  it('a caller who may make the call still gets the validation error', async () => {
    const s = h();
    const res = await s.call('POST', paths.devices(orgA.id), { token: s.admin, body: { hostname: 'h', public_key: wgKey(), relay: 'yes' } });
    expect([res.statusCode, errorCode(res)]).toEqual([400, 'validation_failed']);
  });
});

describe('a used-up or expired registration key is 401 everywhere (PGlite)', () => {
  const h = useServer('pglite');

  // Fix: authenticate() resolves only keys that can still enroll.
  it('enrollment, its own key object and every other route agree', async () => {
    const s = h();
    const org = await s.createOrg();
    const once = await s.createRegKey(org.id, { single_use: true });
    await s.createDevice(org.id, {}, once.key);
    const expired = await s.createRegKey(org.id, { expires_at: new Date(Date.now() - 60_000).toISOString() });
    const calls: [Method, string, unknown][] = [
      ['POST', paths.devices(org.id), { hostname: 'h', public_key: wgKey() }],
      ['GET', paths.ownRegistrationKey(), undefined],
      ['GET', paths.organizations(), undefined],
      ['GET', paths.organization(org.id), undefined],
      ['GET', paths.devices(org.id), undefined],
    ];
    for (const key of [once.key, expired.key]) {
      for (const [method, url, body] of calls) {
        const res = await s.call(method, url, { token: key, body });
        expect([res.statusCode, errorCode(res)], `${method} ${url}: ${res.body}`).toEqual([401, 'unauthorized']);
      }
    }
  });
});
