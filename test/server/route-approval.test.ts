/**
 * Issue 12: an enrolling device or a device token sets only what the device
 * discovers itself; its routes are a request that an organization admin
 * approves, and an approval may not overlap another device's route or the
 * tunnel pool (protocol v1.4).
 */
import { describe, expect, it } from 'vitest';
import { paths, type Device, type EnrolledDevice } from '../../src/protocol/index.js';
import { backends, errorCode, useServer, wgKey, type Harness } from './fixtures.js';

interface ErrorDetails {
  error: { code: string; message: string; details?: Record<string, unknown> };
}

async function orgWithKey(s: Harness, network: Record<string, unknown> = {}): Promise<{ org: string; key: string }> {
  const org = await s.createOrg({ network: { ipv4_cidr: '100.64.0.0/16', ...network } });
  return { org: org.id, key: (await s.createRegKey(org.id)).key };
}

describe.each(backends())('route approval and admin fields on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);

    it('an enrollment may not set relay, security_group_id or approved_cidrs (403), and sets nothing', async () => {
      const s = h();
      const { org, key } = await orgWithKey(s);
      const group = await s.createGroup(org);
      for (const extra of [{ relay: true }, { security_group_id: group.id }, { approved_cidrs: ['10.20.0.0/16'] }]) {
        const res = await s.call('POST', paths.devices(org), { token: key, body: { hostname: 'intruder', public_key: wgKey(), ...extra } });
        expect([res.statusCode, errorCode(res)], JSON.stringify(extra)).toEqual([403, 'forbidden']);
        expect(res.json<ErrorDetails>().error.details).toEqual({ path: `/${Object.keys(extra)[0] ?? ''}` });
      }
      const listed = await s.ok<{ items: Device[] }>(200, 'GET', paths.devices(org));
      expect(listed.items).toEqual([]);
      // What the device discovers itself, and its route request, are accepted.
      const enrolled = await s.createDevice(
        org,
        { symmetric_nat: true, endpoints: [{ source: 'stun', address: '192.0.2.1:51820' }], advertise_cidrs: ['10.20.0.0/17'] },
        key,
      );
      expect(enrolled).toMatchObject({ relay: false, security_group_id: null, advertise_cidrs: ['10.20.0.0/17'], approved_cidrs: [] });
    });

    it('a device token may request routes on its own device but not approve them', async () => {
      const s = h();
      const { org, key } = await orgWithKey(s);
      const device = await s.createDevice(org, {}, key);
      const own = { token: device.device_token };
      const requested = await s.call('PATCH', paths.device(org, device.id), { ...own, body: { advertise_cidrs: ['10.30.0.0/24'] } });
      expect(requested.statusCode).toBe(200);
      expect(requested.json<Device>()).toMatchObject({ advertise_cidrs: ['10.30.0.0/24'], approved_cidrs: [] });
      const approve = await s.call('PATCH', paths.device(org, device.id), { ...own, body: { approved_cidrs: ['10.30.0.0/24'] } });
      expect([approve.statusCode, errorCode(approve)]).toEqual([403, 'forbidden']);
      const orgAdmin = await s.createToken(org, 'admin');
      const approved = await s.call('PATCH', paths.device(org, device.id), { token: orgAdmin, body: { approved_cidrs: ['10.30.0.0/24'] } });
      expect(approved.statusCode).toBe(200);
      expect(approved.json<Device>().approved_cidrs).toEqual(['10.30.0.0/24']);
      const readToken = await s.createToken(org, 'read');
      const byReader = await s.call('PATCH', paths.device(org, device.id), { token: readToken, body: { approved_cidrs: [] } });
      expect(byReader.statusCode).toBe(403);
    });

    it("refuses (409) approving a route that overlaps another device's approved route, naming that device", async () => {
      const s = h();
      const { org, key } = await orgWithKey(s);
      const owner = await s.createDevice(org, { hostname: 'real-owner', advertise_cidrs: ['10.20.0.0/16'] });
      await s.ok(200, 'PATCH', paths.device(org, owner.id), { body: { approved_cidrs: ['10.20.0.0/16'] } });
      const intruder = await s.createDevice(org, { advertise_cidrs: ['10.20.0.0/17', '10.20.128.0/17'] }, key);
      for (const cidr of ['10.20.0.0/17', '10.20.0.0/16', '10.0.0.0/8']) {
        const res = await s.call('PATCH', paths.device(org, intruder.id), { token: s.admin, body: { approved_cidrs: [cidr] } });
        expect([res.statusCode, errorCode(res)], cidr).toEqual([409, 'conflict']);
        const { error } = res.json<ErrorDetails>();
        expect(error.message).toContain(owner.id);
        expect(error.message).toContain('real-owner');
        expect(error.details).toMatchObject({ path: '/approved_cidrs', device_id: owner.id, hostname: 'real-owner', approved_cidr: '10.20.0.0/16' });
      }
      const after = await s.ok<Device>(200, 'GET', paths.device(org, intruder.id));
      expect(after.approved_cidrs).toEqual([]);
      // A disjoint route is approvable, and re-approving it with the owner's list unchanged is fine.
      const disjoint = await s.call('PATCH', paths.device(org, intruder.id), { token: s.admin, body: { approved_cidrs: ['10.21.0.0/16'] } });
      expect(disjoint.statusCode).toBe(200);
      expect((await s.call('PATCH', paths.device(org, owner.id), { token: s.admin, body: { hostname: 'real-owner-2' } })).statusCode).toBe(200);
    });

    it("refuses (409) a route overlapping the organization's tunnel pool, and default routes", async () => {
      const s = h();
      const { org } = await orgWithKey(s);
      const device = await s.createDevice(org);
      for (const cidr of ['100.64.7.0/24', '100.0.0.0/8', '0.0.0.0/0', '::/0']) {
        const res = await s.call('PATCH', paths.device(org, device.id), { token: s.admin, body: { approved_cidrs: [cidr] } });
        expect([res.statusCode, errorCode(res)], cidr).toEqual([409, 'conflict']);
      }
      const pool = await s.call('PATCH', paths.device(org, device.id), { token: s.admin, body: { approved_cidrs: ['100.64.7.0/24'] } });
      expect(pool.json<ErrorDetails>().error.details).toMatchObject({ tunnel_pool: '100.64.0.0/16' });
      // A creation approving a pool route is refused the same way, and creates nothing.
      const created = await s.call('POST', paths.devices(org), {
        token: s.admin,
        body: { hostname: 'h', public_key: wgKey(), approved_cidrs: ['100.64.0.0/30'] },
      });
      expect([created.statusCode, errorCode(created)]).toEqual([409, 'conflict']);
      expect((await s.ok<{ items: Device[] }>(200, 'GET', paths.devices(org))).items).toHaveLength(1);
    });

    it('refuses (400) a requested or approved route with host bits set, naming the entry and the prefix it should be; nothing is written', async () => {
      const s = h();
      const { org, key } = await orgWithKey(s);
      const enrolling = await s.call('POST', paths.devices(org), { token: key, body: { hostname: 'r', public_key: wgKey(), advertise_cidrs: ['10.20.0.1/16'] } });
      expect([enrolling.statusCode, errorCode(enrolling)]).toEqual([400, 'validation_failed']);
      expect(enrolling.json<ErrorDetails>().error).toEqual({
        code: 'validation_failed',
        message: '/advertise_cidrs/0: a prefix without host bits: 10.20.0.0/16 (10.20.0.1/16 has host bits set)',
        details: { path: '/advertise_cidrs/0', expected: 'a prefix without host bits: 10.20.0.0/16 (10.20.0.1/16 has host bits set)' },
      });
      // The key enrolled nothing, and enrolls once the request is written as a prefix.
      expect((await s.ok<{ items: Device[] }>(200, 'GET', paths.devices(org))).items).toEqual([]);
      const device = await s.createDevice(org, { advertise_cidrs: ['10.20.0.0/16'] }, key);
      const cases: [Record<string, unknown>, string, string][] = [
        [{ advertise_cidrs: ['10.20.0.0/16', 'FD00:20::1/48'] }, '/advertise_cidrs/1', 'fd00:20::/48'],
        [{ approved_cidrs: ['192.168.5.7/24'] }, '/approved_cidrs/0', '192.168.5.0/24'],
      ];
      for (const [body, path, should] of cases) {
        const res = await s.call('PATCH', paths.device(org, device.id), { token: s.admin, body });
        expect([res.statusCode, errorCode(res)], res.body).toEqual([400, 'validation_failed']);
        expect(res.json<ErrorDetails>().error.details).toMatchObject({ path });
        expect(res.json<ErrorDetails>().error.message).toContain(should);
      }
      const own = await s.call('PATCH', paths.device(org, device.id), { token: device.device_token, body: { advertise_cidrs: ['10.20.0.1/16'] } });
      expect([own.statusCode, errorCode(own)]).toEqual([400, 'validation_failed']);
      const after = await s.ok<Device>(200, 'GET', paths.device(org, device.id));
      expect([after.revision, after.advertise_cidrs, after.approved_cidrs]).toEqual([device.revision, ['10.20.0.0/16'], []]);
    });

    it('auto-approves requested routes inside network.auto_approve_cidrs, still refusing conflicts', async () => {
      const s = h();
      const { org, key } = await orgWithKey(s, { auto_approve_cidrs: ['10.40.0.0/16'] });
      const first = await s.createDevice(org, { hostname: 'first', advertise_cidrs: ['10.40.1.0/24', '10.50.0.0/24'] }, key);
      expect(first.approved_cidrs).toEqual(['10.40.1.0/24']);
      const clash = await s.call('POST', paths.devices(org), {
        token: key,
        body: { hostname: 'second', public_key: wgKey(), advertise_cidrs: ['10.40.0.0/20'] },
      });
      expect([clash.statusCode, errorCode(clash)]).toEqual([409, 'conflict']);
      expect(clash.json<ErrorDetails>().error.details).toMatchObject({ path: '/advertise_cidrs', device_id: first.id, hostname: 'first' });
      const second = await s.createDevice(org, { hostname: 'second' }, key);
      const patched = await s.call('PATCH', paths.device(org, second.id), { token: second.device_token, body: { advertise_cidrs: ['10.40.2.0/24'] } });
      expect(patched.json<EnrolledDevice>().approved_cidrs).toEqual(['10.40.2.0/24']);
    });
  });
});
