/**
 * Issue 12, "Bad input: a clear 4xx, never a 500 or a hang": values JSON or a
 * query string can carry but nothing downstream can hold are refused with a
 * 400 that names them, and nothing is written.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { paths, type EnrolledDevice, type Organization, type SecurityGroup } from '../../src/protocol/index.js';
import { backends, errorCode, useServer, wgKey, type CallOptions, type InjectResponse, type Method } from './fixtures.js';

/** Fails fast instead of hanging the suite when a request never answers. */
async function within(ms: number, res: Promise<InjectResponse>): Promise<InjectResponse> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([res, late]);
  } finally {
    clearTimeout(timer);
  }
}

const NON_FINITE = ['Infinity', '-Infinity', 'NaN', '1e400', '-1e400'];
const ILL_FORMED_STRINGS: [string, string][] = [
  ['a NUL', 'a\u0000b'],
  ['a lone high surrogate', 'a\ud800b'],
  ['a lone low surrogate', 'a\udc00b'],
  ['a high surrogate at the end', 'ab\udbff'],
];
/** Dates `Date.parse` took (rolling them over, or reading year 0) that PostgreSQL refuses or reads otherwise. */
const IMPOSSIBLE_DATES = [
  '2024-02-30T00:00:00Z',
  '2023-02-29T00:00:00Z',
  '2024-04-31T00:00:00Z',
  '0000-01-01T00:00:00Z',
  '2024-01-01T24:00:00Z',
  '0001-01-01T00:00:00+00:01',
];
/** Dates refused before issue 12 too, kept refused. */
const MALFORMED_DATES = [
  '2024-13-01T00:00:00Z',
  '2024-00-10T00:00:00Z',
  '2024-01-00T00:00:00Z',
  '2024-01-01T00:60:00Z',
  '2024-01-01T00:00:60Z',
  '2024-01-01T00:00:00+24:00',
  '2024-01-01T00:00:00+01:60',
];

describe.each(backends())('bad input on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);
    let org: Organization;
    let device: EnrolledDevice;
    let group: SecurityGroup;

    beforeAll(async () => {
      const s = h();
      org = await s.createOrg();
      device = await s.createDevice(org.id);
      group = await s.createGroup(org.id);
    });

    async function expect400(method: Method, url: string, opts: CallOptions, code = 'validation_failed'): Promise<InjectResponse> {
      const before = await h().counts();
      const res = await within(5_000, h().call(method, url, { token: h().admin, ...opts }));
      expect([res.statusCode, errorCode(res)], `${method} ${url} ${opts.payload ?? JSON.stringify(opts.body)}: ${res.body}`).toEqual([400, code]);
      expect(await h().counts()).toEqual(before);
      return res;
    }

    // Fix: the query/params validator checks values again after Ajv's coercion (validator.ts).
    describe('non-finite query numbers are 400 validation_failed, not a hang or a 500', () => {
      const params: [string, Method, string, () => string][] = [
        ['an agent call', 'POST', 'wait', () => paths.deviceRpc(org.id, device.id, 'ping')],
        ['a device list', 'GET', 'gt_revision', () => paths.devices(org.id)],
        ['a device list', 'GET', 'limit', () => paths.devices(org.id)],
        ['a security group list', 'GET', 'gt_revision', () => paths.securityGroups(org.id)],
        ['a security group list', 'GET', 'limit', () => paths.securityGroups(org.id)],
      ];
      for (const [what, method, param, path] of params) {
        // NaN never passed (Ajv doesn't coerce it); it stays in the table as a guard.
        for (const v of NON_FINITE) {
          it(`${what}: ?${param}=${v}`, async () => {
            const res = await expect400(method, `${path()}?${param}=${v}`, {});
            expect(res.json<{ error: { details: { path: string } } }>().error.details.path).toBe(`querystring:/${param}`);
          });
        }
      }

      it('?wait=121 is still refused and ?wait=0 still answers at once', async () => {
        await expect400('POST', `${paths.deviceRpc(org.id, device.id, 'ping')}?wait=121`, {});
        const res = await within(5_000, h().call('POST', `${paths.deviceRpc(org.id, device.id, 'ping')}?wait=0`, { token: h().admin }));
        expect(errorCode(res)).toBe('agent_not_connected');
      });
    });

    // Fix: the JSON body parser checks what it parsed (json-body.ts, well-formed.ts): the agent call's
    // params have no schema. Schema fields refused 1e400 before too (Ajv's type check); they stay as guards.
    describe('non-finite body numbers are 400', () => {
      const bodies: [string, () => [Method, string], string][] = [
        ['network.mtu', () => ['PATCH', paths.organization(org.id)], '{"network":{"mtu":$}}'],
        ['a rule port', () => ['PATCH', paths.securityGroup(org.id, group.id)], '{"inbound_rules":[{"ip_protocol":"tcp","from_port":$,"to_port":22,"ip_ranges":[]}]}'],
        ['an agent call param (no schema)', () => ['POST', `${paths.deviceRpc(org.id, device.id, 'ping')}?wait=0`], '{"n":$}'],
      ];
      for (const [what, target, template] of bodies) {
        for (const v of ['1e400', '-1e400']) {
          it(`${what}: ${v} is validation_failed`, async () => {
            const [method, url] = target();
            await expect400(method, url, { payload: template.replace('$', v) });
          });
        }
        for (const v of ['Infinity', 'NaN']) {
          it(`${what}: ${v} (not JSON) is bad_request`, async () => {
            const [method, url] = target();
            await expect400(method, url, { payload: template.replace('$', v) }, 'bad_request');
          });
        }
      }
    });

    // Fix: the JSON body parser refuses ill-formed strings; the parts validator does for query strings.
    describe('a NUL or an unpaired surrogate in any string field is 400 validation_failed', () => {
      const fields: [string, (s: string) => [Method, string, unknown, string?]][] = [
        ['device hostname (device token)', (s) => ['PATCH', paths.device(org.id, device.id), { hostname: s }, device.device_token]],
        ['device hostname (create)', (s) => ['POST', paths.devices(org.id), { hostname: s, public_key: wgKey() }]],
        ['organization name', (s) => ['PATCH', paths.organization(org.id), { name: s }]],
        ['organization description', (s) => ['PATCH', paths.organization(org.id), { description: s }]],
        ['new organization name', (s) => ['POST', paths.organizations(), { name: s }]],
        ['security group description', (s) => ['PATCH', paths.securityGroup(org.id, group.id), { description: s }]],
        ['token description', (s) => ['POST', paths.tokens(org.id), { role: 'read', description: s }]],
        ['registration key description', (s) => ['POST', paths.registrationKeys(org.id), { description: s }]],
        ['status apply_error', (s) => [
          'PUT',
          paths.deviceStatus(org.id, device.id),
          { applied_revision: null, apply_error: s, local_endpoints: [], os: null, agent_version: null },
          device.device_token,
        ]],
        ['status local_endpoints item', (s) => [
          'PUT',
          paths.deviceStatus(org.id, device.id),
          { applied_revision: null, apply_error: null, local_endpoints: [s], os: null, agent_version: null },
          device.device_token,
        ]],
        ['agent call param (no schema)', (s) => ['POST', `${paths.deviceRpc(org.id, device.id, 'ping')}?wait=0`, { text: s }]],
        ['agent call param name', (s) => ['POST', `${paths.deviceRpc(org.id, device.id, 'ping')}?wait=0`, { [s]: 1 }]],
      ];
      for (const [what, make] of fields) {
        for (const [kind, value] of ILL_FORMED_STRINGS) {
          it(`${what}: ${kind}`, async () => {
            const [method, url, body, token] = make(value);
            // JSON.stringify escapes both (\u0000, \ud800), as any JSON encoder would.
            await expect400(method, url, { body, ...(token === undefined ? {} : { token }) });
          });
        }
      }

      // Fix: the query/params validator (validator.ts).
      it('the ?after= cursor: a NUL', async () => {
        const res = await expect400('GET', `${paths.devices(org.id)}?after=a%00b`, {});
        expect(res.json<{ error: { details: { path: string } } }>().error.details.path).toBe('querystring:/after');
      });

      it('a well-formed surrogate pair is a character like any other', async () => {
        const res = await h().call('PATCH', paths.organization(org.id), { token: h().admin, body: { description: 'rocket \ud83d\ude80' } });
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json<Organization>().description).toBe('rocket \ud83d\ude80');
      });
    });

    // Fix: the JSON body parser decodes with a fatal UTF-8 decoder.
    it('invalid UTF-8 in a JSON body is 400 bad_request, not stored as U+FFFD', async () => {
      const before = (await h().ok<Organization>(200, 'GET', paths.organization(org.id))).description;
      const invalid: Buffer[] = [
        Buffer.from([0xff, 0xfe]),
        Buffer.from([0xc3]),
        Buffer.from([0xed, 0xa0, 0x80]),
        Buffer.from([0xc0, 0xaf]),
      ];
      for (const bytes of invalid) {
        const payload = Buffer.concat([Buffer.from('{"description":"a'), bytes, Buffer.from('b"}')]);
        const res = await h().server.app.inject({
          method: 'PATCH',
          url: paths.organization(org.id),
          headers: { authorization: `Bearer ${h().admin}`, 'content-type': 'application/json' },
          payload,
        });
        expect([res.statusCode, errorCode(res)], `${bytes.toString('hex')}: ${res.body}`).toEqual([400, 'bad_request']);
      }
      expect((await h().ok<Organization>(200, 'GET', paths.organization(org.id))).description).toBe(before);
    });

    // Fix: FORMATS['date-time'] checks the calendar and the year range.
    describe('an impossible date-time is 400 validation_failed', () => {
      const fields: [string, (d: string) => [Method, string, unknown, string?]][] = [
        ['token expires_at', (d) => ['POST', paths.tokens(org.id), { role: 'read', expires_at: d }]],
        ['registration key expires_at', (d) => ['POST', paths.registrationKeys(org.id), { expires_at: d }]],
        ['status last_seen', (d) => [
          'PUT',
          paths.deviceStatus(org.id, device.id),
          { last_seen: d, applied_revision: null, apply_error: null, local_endpoints: [], os: null, agent_version: null },
          device.device_token,
        ]],
      ];
      for (const [what, make] of fields) {
        for (const d of [...IMPOSSIBLE_DATES, ...MALFORMED_DATES]) {
          it(`${what}: ${d}`, async () => {
            const [method, url, body, token] = make(d);
            const res = await expect400(method, url, { body, ...(token === undefined ? {} : { token }) });
            expect(res.body).toContain('date-time');
          });
        }
      }

      it('real instants at the edges are accepted', async () => {
        for (const d of ['2024-02-29T00:00:00Z', '2000-02-29T23:59:59.999999Z', '9999-12-31T23:59:59Z', '2999-06-30T12:00:00+05:30', '2030-01-01t00:00:00z']) {
          // An organization token's expiry has no maximum (a registration key's is at most --registration-key-max-ttl away).
          const res = await h().call('POST', paths.tokens(org.id), { token: h().admin, body: { role: 'read', expires_at: d } });
          expect(res.statusCode, `${d}: ${res.body}`).toBe(201);
        }
      });
    });

    // Fix: the body check bounds nesting (JSON.stringify of a frame for the agent overflows the stack on a deep one).
    it('a body nested deeper than 64 levels is 400 validation_failed', async () => {
      const deep = `{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
      await expect400('POST', `${paths.deviceRpc(org.id, device.id, 'ping')}?wait=0`, { payload: deep });
      const ok = await within(5_000, h().call('POST', `${paths.deviceRpc(org.id, device.id, 'ping')}?wait=0`, { token: h().admin, payload: `{"a":${'['.repeat(60)}${']'.repeat(60)}}` }));
      expect(errorCode(ok)).toBe('agent_not_connected');
    });
  });
});
