import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEVICE_OWNED_FIELDS, paths, type EnrolledDevice, type Organization } from '../../src/protocol/index.js';
import { backends, errorCode, useServer, wgKey, type InjectResponse, type Method } from './fixtures.js';

interface ErrorDetails {
  error: { code: string; message: string; details?: { path?: string; expected?: string; owner?: string } };
}

function details(res: InjectResponse): ErrorDetails['error'] {
  return (res.json() as ErrorDetails).error;
}

const rule = (over: Record<string, unknown> = {}) => ({ ip_protocol: 'tcp', from_port: 22, to_port: 22, ip_ranges: ['10.0.0.0/8'], ...over });

describe.each(backends())('validation on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);
    let org: Organization;
    let device: EnrolledDevice;

    beforeAll(async () => {
      const s = h();
      org = await s.createOrg();
      device = await s.createDevice(org.id);
    });

    /** Sends a request that must fail with `status`/`code`; returns the error. */
    async function rejects(method: Method, url: string, body: unknown, status: number, code: string): Promise<ErrorDetails['error']> {
      const res = await h().call(method, url, { token: h().admin, body });
      expect(res.statusCode, `${method} ${url} ${JSON.stringify(body)} → ${res.body}`).toBe(status);
      expect(errorCode(res)).toBe(code);
      return details(res);
    }

    describe('unknown fields are rejected with the JSON path of the field', () => {
      const cases: [string, () => [Method, string, unknown], string][] = [
        ['organization, top level', () => ['POST', paths.organizations(), { name: 'x', bogus: 1 }], '/bogus'],
        ['organization network', () => ['PATCH', paths.organization(org.id), { network: { mtu: 1400, jumbo: true } }], '/network/jumbo'],
        ['organization route', () => ['PATCH', paths.organization(org.id), { network: { routes: [{ destination: '10.0.0.0/8', metric: 1 }] } }], '/network/routes/0/metric'],
        ['device', () => ['POST', paths.devices(org.id), { hostname: 'h', public_key: wgKey(), color: 'red' }], '/color'],
        [
          'device endpoint',
          () => ['PATCH', paths.device(org.id, device.id), { endpoints: [{ source: 'local', address: '10.0.0.1:1', weight: 2 }] }],
          '/endpoints/0/weight',
        ],
        ['security group rule', () => ['POST', paths.securityGroups(org.id), { inbound_rules: [rule({ action: 'drop' })] }], '/inbound_rules/0/action'],
        ['token', () => ['POST', paths.tokens(org.id), { role: 'read', scopes: [] }], '/scopes'],
        ['registration key', () => ['POST', paths.registrationKeys(org.id), { uses: 3 }], '/uses'],
        [
          'device status',
          () => [
            'PUT',
            paths.deviceStatus(org.id, device.id),
            { applied_revision: 1, apply_error: null, local_endpoints: [], os: null, agent_version: null, mood: 'ok' },
          ],
          '/mood',
        ],
      ];
      for (const [what, make, path] of cases) {
        it(what, async () => {
          const [method, url, body] = make();
          // Status goes through the device token; everything else through the admin.
          const token = method === 'PUT' ? device.device_token : h().admin;
          const res = await h().call(method, url, { token, body });
          expect(res.statusCode, res.body).toBe(400);
          expect(errorCode(res)).toBe('validation_failed');
          expect(details(res).details?.path).toBe(path);
          expect(details(res).message).toContain(path);
        });
      }
    });

    it('a missing required field names its path', async () => {
      const err = await rejects('POST', paths.devices(org.id), { hostname: 'h' }, 400, 'validation_failed');
      expect(err.details?.path).toBe('/public_key');
    });

    it('malformed JSON is 400 bad_request', async () => {
      for (const payload of ['{"name": ', '{name: "x"}', "{'a':1}", '[1,2']) {
        const res = await h().call('POST', paths.organizations(), { token: h().admin, payload });
        expect(res.statusCode, payload).toBe(400);
        expect(errorCode(res)).toBe('bad_request');
      }
    });

    it('a body over the limit is 413 payload_too_large', async () => {
      const payload = JSON.stringify({ name: 'big', description: 'x'.repeat(1024 * 1024 + 10) });
      const res = await h().call('POST', paths.organizations(), { token: h().admin, payload });
      expect(res.statusCode).toBe(413);
      expect(errorCode(res)).toBe('payload_too_large');
    });

    it('a body that is not an object is validation_failed', async () => {
      for (const payload of ['null', '[]', '"x"', '5']) {
        const res = await h().call('POST', paths.securityGroups(org.id), { token: h().admin, payload });
        expect(res.statusCode, payload).toBe(400);
        expect(errorCode(res)).toBe('validation_failed');
      }
    });

    describe('bodies are taken as sent, never type-coerced', () => {
      const cases: [string, () => [Method, string, unknown], string][] = [
        ['a number for a string', () => ['POST', paths.organizations(), { name: 5 }], '/name'],
        ['a string for an integer', () => ['POST', paths.organizations(), { name: 'n', network: { mtu: '1400' } }], '/network/mtu'],
        ['a number for a boolean', () => ['PATCH', paths.device(org.id, device.id), { relay: 1 }], '/relay'],
        ['a string for a boolean', () => ['PATCH', paths.device(org.id, device.id), { symmetric_nat: 'true' }], '/symmetric_nat'],
        ['null for a string', () => ['PATCH', paths.device(org.id, device.id), { hostname: null }], '/hostname'],
        ['a string for a port', () => ['POST', paths.securityGroups(org.id), { inbound_rules: [rule({ from_port: '22' })] }], '/inbound_rules/0/from_port'],
        ['a string for an array', () => ['PATCH', paths.device(org.id, device.id), { advertise_cidrs: '10.0.0.0/8' }], '/advertise_cidrs'],
      ];
      for (const [what, make, path] of cases) {
        it(what, async () => {
          const [method, url, body] = make();
          const err = await rejects(method, url, body, 400, 'validation_failed');
          expect(err.details?.path).toBe(path);
        });
      }

      it('null stays null (status fields are not turned into "" or 0)', async () => {
        const s = h();
        const body = { applied_revision: null, apply_error: null, local_endpoints: [], os: null, agent_version: null };
        const put = await s.call('PUT', paths.deviceStatus(org.id, device.id), { token: device.device_token, body });
        expect(put.statusCode).toBe(200);
        expect(put.json()).toMatchObject(body);
        const got = (await s.call('GET', paths.device(org.id, device.id), { token: s.admin })).json() as { status: unknown };
        expect(got.status).toMatchObject(body);
      });
    });

    describe('formats', () => {
      const badDevices: [string, Record<string, unknown>, string][] = [
        ['CIDR prefix too long', { advertise_cidrs: ['10.0.0.0/33'] }, '/advertise_cidrs/0'],
        ['CIDR without prefix', { advertise_cidrs: ['10.0.0.0'] }, '/advertise_cidrs/0'],
        ['IPv6 CIDR prefix too long', { advertise_cidrs: ['2001:db8::/129'] }, '/advertise_cidrs/0'],
        ['IPv4 octet out of range', { advertise_cidrs: ['10.0.0.256/24'] }, '/advertise_cidrs/0'],
        ['endpoint without port', { endpoints: [{ source: 'local', address: '10.0.0.1' }] }, '/endpoints/0/address'],
        ['endpoint port 0', { endpoints: [{ source: 'local', address: '10.0.0.1:0' }] }, '/endpoints/0/address'],
        ['endpoint port too big', { endpoints: [{ source: 'local', address: '10.0.0.1:65536' }] }, '/endpoints/0/address'],
        ['endpoint host name', { endpoints: [{ source: 'local', address: 'example.com:51820' }] }, '/endpoints/0/address'],
        ['IPv6 endpoint without brackets', { endpoints: [{ source: 'local', address: '2001:db8::1:51820' }] }, '/endpoints/0/address'],
        ['endpoint source', { endpoints: [{ source: 'guess', address: '10.0.0.1:1' }] }, '/endpoints/0/source'],
        ['key of 31 bytes', { public_key: randomBytes(31).toString('base64') }, '/public_key'],
        ['key of 33 bytes', { public_key: randomBytes(33).toString('base64') }, '/public_key'],
        ['key not base64', { public_key: `${'!'.repeat(43)}=` }, '/public_key'],
        ['security group id not a uuid', { security_group_id: 'default' }, '/security_group_id'],
        ['empty hostname', { hostname: '' }, '/hostname'],
      ];
      for (const [what, over, path] of badDevices) {
        it(`device: ${what}`, async () => {
          const err = await rejects('POST', paths.devices(org.id), { hostname: 'h', public_key: wgKey(), ...over }, 400, 'validation_failed');
          expect(err.details?.path).toBe(path);
        });
      }

      it('device: valid IPv4 and IPv6 values are accepted', async () => {
        const s = h();
        const d = await s.createDevice(org.id, {
          advertise_cidrs: ['10.1.0.0/16', '2001:db8::/48', '192.168.1.7/32'],
          endpoints: [
            { source: 'local', address: '192.168.1.7:51820' },
            { source: 'stun', address: '[2001:db8::7]:1' },
            { source: 'manual', address: '[::ffff:10.0.0.1]:65535' },
          ],
        });
        await s.ok(204, 'DELETE', paths.device(org.id, d.id));
      });

      const badRules: [string, Record<string, unknown>, string][] = [
        ['to_port below from_port', rule({ from_port: 100, to_port: 99 }), '/inbound_rules/0/to_port'],
        ['port above 65535', rule({ from_port: 1, to_port: 65536 }), '/inbound_rules/0/to_port'],
        ['negative port', rule({ from_port: -1 }), '/inbound_rules/0/from_port'],
        ['unknown protocol', rule({ ip_protocol: 'sctp' }), '/inbound_rules/0/ip_protocol'],
        ['icmp with ports', rule({ ip_protocol: 'icmp', from_port: 1, to_port: 2 }), '/inbound_rules/0/from_port'],
        ['CIDR prefix too long', rule({ ip_ranges: ['10.0.0.0/8', '10.0.0.0/40'] }), '/inbound_rules/0/ip_ranges/1'],
        ['IP range reversed', rule({ ip_ranges: ['10.0.0.9-10.0.0.1'] }), '/inbound_rules/0/ip_ranges/0'],
        ['IP range of mixed families', rule({ ip_ranges: ['10.0.0.1-2001:db8::1'] }), '/inbound_rules/0/ip_ranges/0'],
        ['IPv6 range reversed', rule({ ip_ranges: ['2001:db8::9-2001:db8::1'] }), '/inbound_rules/0/ip_ranges/0'],
        ['not an address', rule({ ip_ranges: ['anywhere'] }), '/inbound_rules/0/ip_ranges/0'],
      ];
      for (const [what, r, path] of badRules) {
        it(`security group: ${what}`, async () => {
          const err = await rejects('POST', paths.securityGroups(org.id), { inbound_rules: [r] }, 400, 'validation_failed');
          expect(err.details?.path).toBe(path);
        });
      }

      it('security group: outbound rules are checked the same way, on PATCH too', async () => {
        const g = await h().createGroup(org.id);
        const err = await rejects(
          'PATCH',
          paths.securityGroup(org.id, g.id),
          { outbound_rules: [rule(), rule({ from_port: 10, to_port: 5 })] },
          400,
          'validation_failed',
        );
        expect(err.details?.path).toBe('/outbound_rules/1/to_port');
      });

      it('security group: valid IPv4 and IPv6 rules are accepted', async () => {
        const g = await h().createGroup(org.id, {
          inbound_rules: [
            rule({ ip_ranges: ['10.0.0.1', '10.0.0.0/8', '10.0.0.1-10.0.0.9', '2001:db8::/32', '::1', 'fe80::1-fe80::ff'] }),
            rule({ ip_protocol: 'icmpv6', from_port: 0, to_port: 0, ip_ranges: ['::/0'] }),
            rule({ ip_protocol: 'any', from_port: 0, to_port: 0, ip_ranges: [] }),
            rule({ ip_protocol: 'udp', from_port: 1000, to_port: 2000 }),
          ],
        });
        expect(g.inbound_rules).toHaveLength(4);
      });

      const badNetworks: [string, Record<string, unknown>, string][] = [
        ['mtu too small', { mtu: 575 }, '/network/mtu'],
        ['mtu too big', { mtu: 9001 }, '/network/mtu'],
        ['resolver not an IP', { resolvers: ['dns.example'] }, '/network/resolvers/0'],
        ['route destination not a CIDR', { routes: [{ destination: '10.0.0.1' }] }, '/network/routes/0/destination'],
        ['route via not an IP', { routes: [{ destination: '10.0.0.0/8', via: 'gw' }] }, '/network/routes/0/via'],
        ['pool too small', { ipv4_cidr: '10.0.0.0/31' }, '/network/ipv4_cidr'],
        ['IPv6 pool', { ipv4_cidr: 'fd00::/64' }, '/network/ipv4_cidr'],
      ];
      for (const [what, network, path] of badNetworks) {
        it(`organization network: ${what}`, async () => {
          const err = await rejects('POST', paths.organizations(), { name: 'n', network }, 400, 'validation_failed');
          expect(err.details?.path).toBe(path);
        });
      }
    });

    describe('parameters and query strings', () => {
      it('ids in the path must be UUIDs', async () => {
        const s = h();
        for (const url of [
          paths.organization('not-a-uuid'),
          paths.devices('1234'),
          paths.device(org.id, 'abc'),
          paths.securityGroup(org.id, 'ABCDEF'),
          paths.registrationKey(org.id, '0'),
          paths.token(org.id, 'x'),
        ]) {
          const res = await s.call(url.endsWith('/x') ? 'DELETE' : 'GET', url, { token: s.admin });
          expect(res.statusCode, url).toBe(400);
          expect(errorCode(res)).toBe('validation_failed');
          expect(details(res).details?.path ?? '').toMatch(/org|id/);
        }
      });

      it('list query parameters are validated; unknown ones are rejected', async () => {
        const s = h();
        const cases: [Record<string, string>, string][] = [
          [{ limit: '0' }, 'validation_failed'],
          [{ limit: '1001' }, 'validation_failed'],
          [{ limit: 'ten' }, 'validation_failed'],
          [{ gt_revision: '-1' }, 'validation_failed'],
          [{ gt_revision: '1.5' }, 'validation_failed'],
          [{ colour: 'red' }, 'validation_failed'],
          [{ after: 'not-a-cursor' }, 'bad_request'],
        ];
        for (const [query, code] of cases) {
          const res = await s.call('GET', paths.devices(org.id), { token: s.admin, query });
          expect(res.statusCode, JSON.stringify(query)).toBe(400);
          expect(errorCode(res)).toBe(code);
        }
      });

      it('a malformed If-Match is 400', async () => {
        const s = h();
        const res = await s.call('PATCH', paths.organization(org.id), { token: s.admin, body: { description: 'x' }, headers: { 'if-match': 'yesterday' } });
        expect(res.statusCode).toBe(400);
        expect(errorCode(res)).toBe('bad_request');
      });
    });

    describe('field ownership', () => {
      const values: Record<string, unknown> = {
        tunnel_ip: '100.64.0.9',
        organization_id: '00000000-0000-4000-8000-000000000000',
        revision: 7,
        mtu: 1280,
        resolvers: ['1.1.1.1'],
        routes: [{ destination: '10.0.0.0/8' }],
        status: { online: true },
        ephemeral: true,
      };
      const owners: Record<string, RegExp> = {
        ephemeral: /registration key/,
        mtu: /PATCH \/api\/organizations\/[0-9a-f-]{36}/,
        resolvers: /PATCH \/api\/organizations\/[0-9a-f-]{36}/,
        routes: /PATCH \/api\/organizations\/[0-9a-f-]{36}/,
        status: /PUT \/api\/organizations\/[0-9a-f-]{36}\/devices\/[0-9a-f-]{36}\/status/,
        tunnel_ip: /server/,
        organization_id: /server/,
        revision: /server/,
      };
      for (const field of Object.keys(DEVICE_OWNED_FIELDS)) {
        it(`"${field}" on a device PATCH and POST is 409 field_owned_elsewhere naming its owner`, async () => {
          const s = h();
          const patch = await s.call('PATCH', paths.device(org.id, device.id), { token: s.admin, body: { [field]: values[field] } });
          expect(patch.statusCode, patch.body).toBe(409);
          expect(errorCode(patch)).toBe('field_owned_elsewhere');
          expect(details(patch).message).toContain(field);
          expect(details(patch).message).toMatch(owners[field] ?? /never/);
          if (field === 'status' || field === 'mtu') {
            // The named endpoint is the real one for this organization and device.
            expect(details(patch).message).toContain(org.id);
          }
          if (field === 'status') expect(details(patch).message).toContain(device.id);
          // The device itself gets the same answer, not a plain 403.
          const own = await s.call('PATCH', paths.device(org.id, device.id), { token: device.device_token, body: { [field]: values[field] } });
          expect(own.statusCode).toBe(409);
          expect(errorCode(own)).toBe('field_owned_elsewhere');
          const post = await s.call('POST', paths.devices(org.id), {
            token: s.admin,
            body: { hostname: 'h', public_key: wgKey(), [field]: values[field] },
          });
          expect(post.statusCode).toBe(409);
          expect(errorCode(post)).toBe('field_owned_elsewhere');
        });
      }
    });

    it('no rejected request above changed a revision or a row', async () => {
      const s = h();
      // A fresh organization, so the valid writes of the other tests don't move the counters.
      const fresh = await s.createOrg();
      const head = await s.head(fresh.id);
      const counts = await s.counts();
      const attempts: [Method, string, unknown][] = [
        ['POST', paths.devices(fresh.id), { hostname: 'h', public_key: wgKey(), tunnel_ip: '100.64.0.1' }],
        ['POST', paths.devices(fresh.id), { hostname: 'h', public_key: 'short' }],
        ['POST', paths.securityGroups(fresh.id), { inbound_rules: [rule({ from_port: 9, to_port: 1 })] }],
        ['PATCH', paths.organization(fresh.id), { network: { mtu: 1 } }],
        ['PATCH', paths.organization(fresh.id), { network: { ipv4_cidr: '10.0.0.0/31' } }],
        ['POST', paths.tokens(fresh.id), { role: 'owner' }],
        ['POST', paths.registrationKeys(fresh.id), { expires_at: 'tomorrow' }],
      ];
      for (const [method, url, body] of attempts) {
        const res = await s.call(method, url, { token: s.admin, body });
        expect(res.statusCode, `${method} ${url} ${res.body}`).toBeGreaterThanOrEqual(400);
      }
      expect(await s.head(fresh.id)).toBe(head);
      expect(await s.counts()).toEqual(counts);
    });
  });
});
