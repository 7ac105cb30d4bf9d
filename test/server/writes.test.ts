import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { HEADERS, paths, type Device, type EnrolledDevice, type Organization, type SecurityGroup } from '../../src/protocol/index.js';
import { backends, errorCode, uniqueName, useServer, wgKey, type Harness } from './fixtures.js';

const status = { applied_revision: 1, apply_error: null, local_endpoints: ['10.0.0.1:51820'], os: 'linux', agent_version: '0.1' };

describe.each(backends())('writes on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);

    describe('If-Match', () => {
      async function check(s: Harness, url: string, body: Record<string, unknown>, current: number): Promise<void> {
        const wrong = await s.call('PATCH', url, { token: s.admin, body, headers: { 'if-match': `"${current + 1}"` } });
        expect(wrong.statusCode).toBe(412);
        expect(errorCode(wrong)).toBe('precondition_failed');
        const del = await s.call('DELETE', url, { token: s.admin, headers: { 'if-match': `"${current - 1}"` } });
        expect(del.statusCode).toBe(412);
        const right = await s.call('PATCH', url, { token: s.admin, body, headers: { 'if-match': `"${current}"` } });
        expect(right.statusCode).toBe(200);
        const next = (right.json() as { revision: number }).revision;
        expect(next).toBeGreaterThan(current);
        expect(right.headers[HEADERS.etag]).toBe(`"${next}"`);
        // The old revision no longer matches; the weak form of the new one does.
        expect((await s.call('PATCH', url, { token: s.admin, body: { ...body, description: 'again' }, headers: { 'if-match': `"${current}"` } })).statusCode).toBe(412);
        expect((await s.call('DELETE', url, { token: s.admin, headers: { 'if-match': `W/"${next}"` } })).statusCode).toBe(204);
      }

      it('on devices, security groups and organizations: 412 on mismatch, applied on match', async () => {
        const s = h();
        const org = await s.createOrg();
        const g = await s.createGroup(org.id);
        await check(s, paths.securityGroup(org.id, g.id), { description: 'changed' }, g.revision);
        const d = await s.createDevice(org.id);
        const url = paths.device(org.id, d.id);
        const wrong = await s.call('PATCH', url, { token: s.admin, body: { relay: true }, headers: { 'if-match': `"${d.revision + 5}"` } });
        expect(wrong.statusCode).toBe(412);
        expect((await s.call('DELETE', url, { token: s.admin, headers: { 'if-match': `"${d.revision}"` } })).statusCode).toBe(204);
        await check(s, paths.organization(org.id), { description: 'changed' }, (await s.ok<Organization>(200, 'GET', paths.organization(org.id))).revision);
      });

      it('a failed precondition changes nothing', async () => {
        const s = h();
        const org = await s.createOrg();
        const d = await s.createDevice(org.id);
        const head = await s.head(org.id);
        await s.call('PATCH', paths.device(org.id, d.id), { token: s.admin, body: { hostname: 'x' }, headers: { 'if-match': '"1"' } });
        expect(await s.head(org.id)).toBe(head);
        expect((await s.ok<Device>(200, 'GET', paths.device(org.id, d.id))).hostname).toBe(d.hostname);
      });
    });

    describe('a PATCH that changes nothing', () => {
      it('returns 200 with the unchanged object and bumps no revision', async () => {
        const s = h();
        const org = await s.createOrg({ network: { resolvers: ['1.1.1.1'] } });
        const g = await s.createGroup(org.id, { description: 'g', inbound_rules: [{ ip_protocol: 'tcp', from_port: 22, to_port: 22, ip_ranges: ['10.0.0.0/8'] }] });
        const d = await s.createDevice(org.id, { endpoints: [{ source: 'local', address: '10.0.0.1:51820' }] });
        const head = await s.head(org.id);

        const samples: [string, unknown, number][] = [
          [paths.device(org.id, d.id), { hostname: d.hostname, relay: false, endpoints: d.endpoints }, d.revision],
          [paths.device(org.id, d.id), {}, d.revision],
          [paths.securityGroup(org.id, g.id), { description: 'g', inbound_rules: g.inbound_rules }, g.revision],
          [paths.organization(org.id), { name: org.name, network: { resolvers: ['1.1.1.1'], mtu: 1420 } }, org.revision],
        ];
        for (const [url, body, revision] of samples) {
          const res = await s.call('PATCH', url, { token: s.admin, body });
          expect(res.statusCode, url).toBe(200);
          expect((res.json() as { revision: number }).revision).toBe(revision);
        }
        const own = await s.call('PATCH', paths.device(org.id, d.id), { token: d.device_token, body: { endpoints: d.endpoints } });
        expect(own.statusCode).toBe(200);
        expect(await s.head(org.id)).toBe(head);
        const full = await s.ok<Device>(200, 'GET', paths.device(org.id, d.id));
        expect(full.updated_at).toBe(d.updated_at);

        // A real change takes exactly the next revision.
        const changed = await s.ok<Device>(200, 'PATCH', paths.device(org.id, d.id), { body: { relay: true } });
        expect(changed.revision).toBe(head + 1);
        expect(await s.head(org.id)).toBe(head + 1);
      });

      it('writing status changes no revision', async () => {
        const s = h();
        const org = await s.createOrg();
        const d = await s.createDevice(org.id);
        const head = await s.head(org.id);
        for (let i = 0; i < 3; i++) {
          await s.ok(200, 'PUT', paths.deviceStatus(org.id, d.id), { token: d.device_token, body: { ...status, applied_revision: i } });
        }
        expect(await s.head(org.id)).toBe(head);
        const got = await s.ok<Device>(200, 'GET', paths.device(org.id, d.id));
        expect(got.revision).toBe(d.revision);
        expect(got.status.applied_revision).toBe(2);
      });
    });

    describe('conflicts', () => {
      it('a security group in use cannot be deleted until no device references it', async () => {
        const s = h();
        const org = await s.createOrg();
        const g = await s.createGroup(org.id);
        const d = await s.createDevice(org.id, { security_group_id: g.id });
        const head = await s.head(org.id);
        const res = await s.call('DELETE', paths.securityGroup(org.id, g.id), { token: s.admin });
        expect(res.statusCode).toBe(409);
        expect(errorCode(res)).toBe('conflict');
        expect(await s.head(org.id)).toBe(head);
        await s.ok(200, 'PATCH', paths.device(org.id, d.id), { body: { security_group_id: null } });
        await s.ok(204, 'DELETE', paths.securityGroup(org.id, g.id));
        expect((await s.call('GET', paths.securityGroup(org.id, g.id), { token: s.admin })).statusCode).toBe(404);
      });

      it("a device can't reference a missing, deleted or foreign security group", async () => {
        const s = h();
        const org = await s.createOrg();
        const other = await s.createOrg();
        const foreign = await s.createGroup(other.id);
        const gone = await s.createGroup(org.id);
        await s.ok(204, 'DELETE', paths.securityGroup(org.id, gone.id));
        const d = await s.createDevice(org.id);
        for (const id of [randomUUID(), gone.id, foreign.id]) {
          const create = await s.call('POST', paths.devices(org.id), { token: s.admin, body: { hostname: 'h', public_key: wgKey(), security_group_id: id } });
          expect(create.statusCode).toBe(400);
          expect(errorCode(create)).toBe('validation_failed');
          const patch = await s.call('PATCH', paths.device(org.id, d.id), { token: s.admin, body: { security_group_id: id } });
          expect(patch.statusCode).toBe(400);
        }
      });

      it('public_key is unique within an organization, reusable after delete and in other organizations', async () => {
        const s = h();
        const org = await s.createOrg();
        const other = await s.createOrg();
        const key = wgKey();
        const first = await s.createDevice(org.id, { public_key: key });
        const dup = await s.call('POST', paths.devices(org.id), { token: s.admin, body: { hostname: 'dup', public_key: key } });
        expect(dup.statusCode).toBe(409);
        expect(errorCode(dup)).toBe('conflict');
        const second = await s.createDevice(org.id);
        const patch = await s.call('PATCH', paths.device(org.id, second.id), { token: s.admin, body: { public_key: key } });
        expect(patch.statusCode).toBe(409);
        await s.createDevice(other.id, { public_key: key });
        await s.ok(204, 'DELETE', paths.device(org.id, first.id));
        await s.createDevice(org.id, { public_key: key });
      });

      it('a non-empty organization cannot be deleted', async () => {
        const s = h();
        const org = await s.createOrg();
        const g = await s.createGroup(org.id);
        expect((await s.call('DELETE', paths.organization(org.id), { token: s.admin })).statusCode).toBe(409);
        await s.ok(204, 'DELETE', paths.securityGroup(org.id, g.id));
        const token = await s.createToken(org.id, 'admin');
        await s.ok(204, 'DELETE', paths.organization(org.id));
        expect((await s.call('GET', paths.organization(org.id), { token: s.admin })).statusCode).toBe(404);
        expect((await s.call('GET', paths.devices(org.id), { token: s.admin })).statusCode).toBe(404);
        expect((await s.call('GET', paths.organization(org.id), { token })).statusCode).toBe(401);
      });
    });

    describe('tunnel IPs', () => {
      it('are the lowest free address, freed on delete and reused', async () => {
        const s = h();
        const org = await s.createOrg({ network: { ipv4_cidr: '10.20.0.0/24' } });
        const ds: EnrolledDevice[] = [];
        for (let i = 0; i < 4; i++) ds.push(await s.createDevice(org.id));
        expect(ds.map((d) => d.tunnel_ip)).toEqual(['10.20.0.1', '10.20.0.2', '10.20.0.3', '10.20.0.4']);
        await s.ok(204, 'DELETE', paths.device(org.id, ds[1]!.id));
        await s.ok(204, 'DELETE', paths.device(org.id, ds[0]!.id));
        expect((await s.createDevice(org.id)).tunnel_ip).toBe('10.20.0.1');
        expect((await s.createDevice(org.id)).tunnel_ip).toBe('10.20.0.2');
        expect((await s.createDevice(org.id)).tunnel_ip).toBe('10.20.0.5');
      });

      it('a full pool is 409; the pool cannot change while devices exist', async () => {
        const s = h();
        const org = await s.createOrg({ network: { ipv4_cidr: '10.30.0.0/30' } });
        const a = await s.createDevice(org.id);
        const b = await s.createDevice(org.id);
        expect([a.tunnel_ip, b.tunnel_ip]).toEqual(['10.30.0.1', '10.30.0.2']);
        const head = await s.head(org.id);
        const full = await s.call('POST', paths.devices(org.id), { token: s.admin, body: { hostname: 'c', public_key: wgKey() } });
        expect(full.statusCode).toBe(409);
        expect(errorCode(full)).toBe('conflict');
        const move = await s.call('PATCH', paths.organization(org.id), { token: s.admin, body: { network: { ipv4_cidr: '10.40.0.0/24' } } });
        expect(move.statusCode).toBe(409);
        expect(await s.head(org.id)).toBe(head);
        await s.ok(204, 'DELETE', paths.device(org.id, a.id));
        await s.ok(204, 'DELETE', paths.device(org.id, b.id));
        await s.ok(200, 'PATCH', paths.organization(org.id), { body: { network: { ipv4_cidr: '10.40.0.0/24' } } });
        expect((await s.createDevice(org.id)).tunnel_ip).toBe('10.40.0.1');
      });

      it('are unique under 30 concurrent enrollments', async () => {
        const s = h();
        const org = await s.createOrg({ network: { ipv4_cidr: '10.50.0.0/24' } });
        // Several credentials: enrollments with one key would queue on that key's row instead of the pool.
        const tokens = [s.admin, await s.createToken(org.id, 'admin'), (await s.createRegKey(org.id)).key, (await s.createRegKey(org.id)).key];
        const results = await Promise.all(
          Array.from({ length: 30 }, (_, i) =>
            s.call('POST', paths.devices(org.id), { token: tokens[i % tokens.length], body: { hostname: `c${i}`, public_key: wgKey() } }),
          ),
        );
        expect(results.map((r) => r.statusCode)).toEqual(new Array(30).fill(201));
        const ips = results.map((r) => (r.json() as EnrolledDevice).tunnel_ip);
        expect(new Set(ips).size).toBe(30);
        const want = Array.from({ length: 30 }, (_, i) => `10.50.0.${i + 1}`);
        expect([...ips].sort()).toEqual([...want].sort());
        const revisions = results.map((r) => (r.json() as EnrolledDevice).revision).sort((x, y) => x - y);
        expect(new Set(revisions).size).toBe(30);
      });
    });

    describe('registration keys and device tokens', () => {
      const enroll = (s: Harness, org: string, key: string) =>
        s.call('POST', paths.devices(org), { token: key, body: { hostname: uniqueName('h'), public_key: wgKey() } });

      it('a single-use key enrolls exactly one device, even when used concurrently', async () => {
        const s = h();
        const org = await s.createOrg();
        const key = await s.createRegKey(org.id, { single_use: true });
        expect(key.key).toMatch(/^fpr_/);
        const results = await Promise.all([1, 2, 3, 4, 5].map(() => enroll(s, org.id, key.key)));
        expect(results.map((r) => r.statusCode).sort()).toEqual([201, 401, 401, 401, 401]);
        expect((await enroll(s, org.id, key.key)).statusCode).toBe(401);
        const got = await s.ok<{ used: boolean; single_use: boolean }>(200, 'GET', paths.registrationKey(org.id, key.id));
        expect(got).toMatchObject({ used: true, single_use: true });
        expect(JSON.stringify(got)).not.toContain(key.key);
        const list = await s.call('GET', paths.registrationKeys(org.id), { token: s.admin });
        expect(list.body).not.toContain(key.key);
        const devices = await s.ok<{ items: unknown[] }>(200, 'GET', paths.devices(org.id));
        expect(devices.items).toHaveLength(1);
      });

      it('an expired or deleted key fails; a reusable key works many times', async () => {
        const s = h();
        const org = await s.createOrg();
        const expired = await s.createRegKey(org.id, { expires_at: new Date(Date.now() - 1000).toISOString() });
        const res = await enroll(s, org.id, expired.key);
        expect(res.statusCode).toBe(401);
        expect(errorCode(res)).toBe('unauthorized');
        const reusable = await s.createRegKey(org.id, { expires_at: new Date(Date.now() + 3_600_000).toISOString() });
        for (let i = 0; i < 3; i++) expect((await enroll(s, org.id, reusable.key)).statusCode).toBe(201);
        await s.ok(204, 'DELETE', paths.registrationKey(org.id, reusable.id));
        expect((await enroll(s, org.id, reusable.key)).statusCode).toBe(401);
        // A key only enrolls into its own organization.
        const other = await s.createOrg();
        const key = await s.createRegKey(org.id);
        expect((await enroll(s, other.id, key.key)).statusCode).toBe(404);
      });

      it('a failed enrollment does not use up a single-use key', async () => {
        const s = h();
        const org = await s.createOrg();
        const key = await s.createRegKey(org.id, { single_use: true });
        // Fails inside the enrollment's transaction, after the key was taken: another device has this key.
        const taken = await s.createDevice(org.id);
        const bad = await s.call('POST', paths.devices(org.id), {
          token: key.key,
          body: { hostname: 'h', public_key: taken.public_key },
        });
        expect([bad.statusCode, errorCode(bad)]).toEqual([409, 'conflict']);
        expect((await s.ok<{ used: boolean }>(200, 'GET', paths.registrationKey(org.id, key.id))).used).toBe(false);
        expect((await enroll(s, org.id, key.key)).statusCode).toBe(201);
      });

      it('device_token is returned once and works for its own device; deleting the device revokes it', async () => {
        const s = h();
        const org = await s.createOrg();
        const key = await s.createRegKey(org.id);
        const created = (await enroll(s, org.id, key.key)).json() as EnrolledDevice;
        expect(created.device_token).toMatch(/^fpd_/);
        const get = await s.call('GET', paths.device(org.id, created.id), { token: s.admin });
        const list = await s.call('GET', paths.devices(org.id), { token: s.admin });
        for (const res of [get, list]) {
          expect(res.body).not.toContain(created.device_token);
          expect(res.body).not.toContain('device_token');
        }
        const t = { token: created.device_token };
        expect((await s.call('GET', paths.devices(org.id), t)).statusCode).toBe(200);
        expect((await s.call('PATCH', paths.device(org.id, created.id), { ...t, body: { symmetric_nat: true } })).statusCode).toBe(200);
        expect((await s.call('PUT', paths.deviceStatus(org.id, created.id), { ...t, body: status })).statusCode).toBe(200);
        await s.ok(204, 'DELETE', paths.device(org.id, created.id));
        const after = await s.call('GET', paths.devices(org.id), t);
        expect(after.statusCode).toBe(401);
        expect(errorCode(after)).toBe('unauthorized');
        expect((await s.call('PUT', paths.deviceStatus(org.id, created.id), { ...t, body: status })).statusCode).toBe(401);
      });
    });

    describe('atomicity', () => {
      it('a failing request in the middle of a batch leaves revisions and rows untouched', async () => {
        const s = h();
        const org = await s.createOrg();
        const g = await s.createGroup(org.id);
        const taken = (await s.createDevice(org.id, { security_group_id: g.id })).public_key;
        const okDevice = () => s.createDevice(org.id, { security_group_id: g.id });
        const failures: [string, () => Promise<number>][] = [
          [
            'device with an unknown security group',
            async () =>
              (await s.call('POST', paths.devices(org.id), { token: s.admin, body: { hostname: 'x', public_key: wgKey(), security_group_id: randomUUID() } }))
                .statusCode,
          ],
          [
            'device with a duplicate public key',
            async () => (await s.call('POST', paths.devices(org.id), { token: s.admin, body: { hostname: 'y', public_key: taken } })).statusCode,
          ],
          ['delete of a group in use', async () => (await s.call('DELETE', paths.securityGroup(org.id, g.id), { token: s.admin })).statusCode],
        ];
        for (const [what, fail] of failures) {
          for (let i = 0; i < 2; i++) await okDevice();
          const head = await s.head(org.id);
          const counts = await s.counts();
          const group = await s.ok<SecurityGroup>(200, 'GET', paths.securityGroup(org.id, g.id));
          expect(await fail(), what).toBeGreaterThanOrEqual(400);
          expect(await s.head(org.id), what).toBe(head);
          expect(await s.counts(), what).toEqual(counts);
          expect(await s.ok<SecurityGroup>(200, 'GET', paths.securityGroup(org.id, g.id))).toEqual(group);
          // The next success takes exactly the next revision: the failure consumed none.
          expect((await okDevice()).revision, what).toBe(head + 1);
        }
      });
    });
  });
});
