/**
 * Issue 35, part 1: devices carry tags (set by admins, or given by the
 * registration key that enrolls them), security groups have unique names,
 * and rules name devices by tag or group (protocol v1.12).
 */
import { describe, expect, it } from 'vitest';
import { paths, type Device, type RegistrationKey, type SecurityGroup } from '../../src/protocol/index.js';
import { backends, errorCode, useServer, wgKey } from './fixtures.js';
import { addMemberForTest, createUserForTest } from './support/users.js';

interface ErrorBody {
  error: { code: string; message: string; details?: Record<string, unknown> };
}

describe.each(backends())('tags, group names and device references on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);

    it('a registration key gives its tags to the devices it enrolls; only admins change them', async () => {
      const s = h();
      const org = (await s.createOrg()).id;
      const key = await s.createRegKey(org, { tags: ['tag:web', 'tag:app', 'tag:web'] });
      expect(key.tags).toEqual(['tag:app', 'tag:web']);
      const listed = await s.ok<{ items: RegistrationKey[] }>(200, 'GET', paths.registrationKeys(org));
      expect(listed.items.map((k) => k.tags)).toEqual([['tag:app', 'tag:web']]);
      const device = await s.createDevice(org, {}, key.key);
      expect(device.tags).toEqual(['tag:app', 'tag:web']);
      // The device may not tag itself, at enrollment or later.
      const enroll = await s.call('POST', paths.devices(org), { token: key.key, body: { hostname: 'x', public_key: wgKey(), tags: ['tag:db'] } });
      expect([enroll.statusCode, errorCode(enroll), enroll.json<ErrorBody>().error.details]).toEqual([403, 'forbidden', { path: '/tags' }]);
      const own = await s.call('PATCH', paths.device(org, device.id), { token: device.device_token, body: { tags: ['tag:db'] } });
      expect([own.statusCode, errorCode(own)]).toEqual([403, 'forbidden']);
      const admin = await s.createToken(org, 'admin');
      // Rules naming the tag are not rewritten when a device joins or leaves it: the change is the device's one revision.
      await s.createGroup(org, { name: 'db', inbound_rules: [{ ip_protocol: 'tcp', from_port: 5432, to_port: 5432, ip_ranges: [], devices: ['tag:db'] }] });
      const before = await s.head(org);
      const retagged = await s.call('PATCH', paths.device(org, device.id), { token: admin, body: { tags: ['tag:db', 'tag:app'] } });
      expect(retagged.statusCode).toBe(200);
      expect(retagged.json<Device>().tags).toEqual(['tag:app', 'tag:db']);
      expect(await s.head(org)).toBe(before + 1);
    });

    it("with tag_owners declared, only a tag's owners give or take it, and only declared tags are given", async () => {
      const s = h();
      const org = (await s.createOrg()).id;
      await s.ok(200, 'PATCH', paths.organization(org), {
        body: { tag_owners: { 'tag:ops': ['role:admin'], 'tag:prod': ['role:owner', 'Alice@Example.test'] } },
      });
      // A key that is not a tag is refused, not ignored: its owners would own nothing.
      const notATag = await s.call('PATCH', paths.organization(org), { token: s.admin, body: { tag_owners: { web: ['role:admin'] } } });
      expect([notATag.statusCode, errorCode(notATag)]).toEqual([400, 'validation_failed']);
      const orgAdmin = await s.createToken(org, 'admin');
      const device = await s.createDevice(org);
      const tag = (tags: string[], token: string) => s.call('PATCH', paths.device(org, device.id), { token, body: { tags } });

      expect((await tag(['tag:ops'], orgAdmin)).statusCode).toBe(200);
      const notOwner = await tag(['tag:ops', 'tag:prod'], orgAdmin);
      expect([notOwner.statusCode, errorCode(notOwner), notOwner.json<ErrorBody>().error.details]).toEqual([
        403,
        'forbidden',
        { path: '/tags/1', tag: 'tag:prod' },
      ]);
      const undeclared = await tag(['tag:ops', 'tag:web'], orgAdmin);
      expect([undeclared.statusCode, errorCode(undeclared), undeclared.json<ErrorBody>().error.details?.['path']]).toEqual([400, 'validation_failed', '/tags/1']);
      // An owner member, a member named by email (any case), and the admin token may give tag:prod.
      const owner = await createUserForTest(s.server.db);
      await addMemberForTest(s.server.db, org, owner.id, 'owner');
      expect((await tag(['tag:ops', 'tag:prod'], owner.session)).statusCode).toBe(200);
      // Taking it is giving it back: the same owners.
      expect([(await tag(['tag:ops'], orgAdmin)).statusCode]).toEqual([403]);
      const alice = await createUserForTest(s.server.db, { email: 'alice@example.test' });
      await addMemberForTest(s.server.db, org, alice.id, 'admin');
      expect((await tag(['tag:ops'], alice.session)).statusCode).toBe(200);
      const bob = await createUserForTest(s.server.db);
      await addMemberForTest(s.server.db, org, bob.id, 'admin');
      expect((await tag(['tag:ops', 'tag:prod'], bob.session)).statusCode).toBe(403);
      expect((await tag(['tag:ops', 'tag:prod'], s.admin)).statusCode).toBe(200);
      // A registration key gives its tags: making one is held to the same owners.
      const key = await s.call('POST', paths.registrationKeys(org), { token: orgAdmin, body: { tags: ['tag:prod'] } });
      expect([key.statusCode, errorCode(key)]).toEqual([403, 'forbidden']);
      expect((await s.call('POST', paths.registrationKeys(org), { token: orgAdmin, body: { tags: ['tag:ops'] } })).statusCode).toBe(201);
      expect((await s.createRegKey(org, { tags: ['tag:prod'] })).tags).toEqual(['tag:prod']);
      // A patch that leaves the tags as they are is no tag change.
      expect((await s.call('PATCH', paths.device(org, device.id), { token: orgAdmin, body: { tags: ['tag:prod', 'tag:ops'], hostname: 'renamed' } })).statusCode).toBe(200);
    });

    it("approves a route a tagged device requests inside its tag's auto_approvers, on enrollment and when the tag is given", async () => {
      const s = h();
      const org = (await s.createOrg({ network: { auto_approvers: [{ cidr: '10.20.0.0/16', tags: ['tag:router'] }] } })).id;
      const routerKey = await s.createRegKey(org, { tags: ['tag:router'] });
      const router = await s.createDevice(org, { advertise_cidrs: ['10.20.1.0/24', '10.30.0.0/24'] }, routerKey.key);
      expect(router.approved_cidrs).toEqual(['10.20.1.0/24']);
      const plainKey = await s.createRegKey(org);
      const other = await s.createDevice(org, { advertise_cidrs: ['10.20.2.0/24'] }, plainKey.key);
      expect(other.approved_cidrs).toEqual([]);
      // Its standing request is weighed again when the device is given the tag.
      const tagged = await s.ok<Device>(200, 'PATCH', paths.device(org, other.id), { body: { tags: ['tag:router'] } });
      expect(tagged.approved_cidrs).toEqual(['10.20.2.0/24']);
      const hostBits = await s.call('PATCH', paths.organization(org), {
        token: s.admin,
        body: { network: { auto_approvers: [{ cidr: '10.20.0.1/16', tags: ['tag:router'] }] } },
      });
      expect([hostBits.statusCode, errorCode(hostBits), hostBits.json<ErrorBody>().error.details?.['path']]).toEqual([
        400,
        'validation_failed',
        '/network/auto_approvers/0/cidr',
      ]);
    });

    it('refuses a tag that is not tag:<label> (400, naming it)', async () => {
      const s = h();
      const org = (await s.createOrg()).id;
      for (const bad of ['web', 'tag:', 'tag:Web', 'tag:-web', 'group:web', `tag:${'a'.repeat(64)}`]) {
        const res = await s.call('POST', paths.devices(org), { token: s.admin, body: { hostname: 'h', public_key: wgKey(), tags: [bad] } });
        expect([res.statusCode, errorCode(res)], bad).toEqual([400, 'validation_failed']);
        expect(res.json<ErrorBody>().error.details?.['path'], bad).toBe('/tags/0');
      }
      const key = await s.call('POST', paths.registrationKeys(org), { token: s.admin, body: { tags: ['db'] } });
      expect([key.statusCode, errorCode(key)]).toEqual([400, 'validation_failed']);
    });

    it('group names are unique among live groups (409 already_exists naming /name), may be reused once the group is gone, and are not ids', async () => {
      const s = h();
      const org = (await s.createOrg()).id;
      const web = await s.createGroup(org, { name: 'web' });
      expect(web.name).toBe('web');
      const unnamed = await s.createGroup(org, { description: 'legacy' });
      expect(unnamed.name).toBeNull();
      const twice = await s.call('POST', paths.securityGroups(org), { token: s.admin, body: { name: 'web' } });
      expect([twice.statusCode, errorCode(twice), twice.json<ErrorBody>().error.details]).toEqual([409, 'already_exists', { path: '/name' }]);
      const renamed = await s.call('PATCH', paths.securityGroup(org, unnamed.id), { token: s.admin, body: { name: 'web' } });
      expect([renamed.statusCode, errorCode(renamed), renamed.json<ErrorBody>().error.details]).toEqual([409, 'already_exists', { path: '/name' }]);
      // Other organizations have their own names.
      const other = (await s.createOrg()).id;
      expect((await s.createGroup(other, { name: 'web' })).name).toBe('web');
      await s.ok(204, 'DELETE', paths.securityGroup(org, web.id));
      expect((await s.ok<SecurityGroup>(200, 'PATCH', paths.securityGroup(org, unnamed.id), { body: { name: 'web' } })).name).toBe('web');
      const uuidShaped = await s.call('POST', paths.securityGroups(org), { token: s.admin, body: { name: '0d000000-0000-4000-8000-000000000001' } });
      expect([uuidShaped.statusCode, errorCode(uuidShaped)]).toEqual([400, 'validation_failed']);
    });

    it('rules take tag and group references beside address ranges, and refuse anything else', async () => {
      const s = h();
      const org = (await s.createOrg()).id;
      const rule = { ip_protocol: 'tcp', from_port: 5432, to_port: 5432, ip_ranges: ['10.0.0.0/8'], devices: ['tag:app', 'group:web'] };
      const db = await s.createGroup(org, { name: 'db', inbound_rules: [rule] });
      expect(db.inbound_rules).toEqual([rule]);
      const fetched = await s.ok<SecurityGroup>(200, 'GET', paths.securityGroup(org, db.id));
      expect(fetched.inbound_rules[0]?.devices).toEqual(['tag:app', 'group:web']);
      for (const bad of ['10.0.0.0/8', 'web', 'tag:App', 'host:web']) {
        const res = await s.call('PATCH', paths.securityGroup(org, db.id), { token: s.admin, body: { inbound_rules: [{ ...rule, devices: [bad] }] } });
        expect([res.statusCode, errorCode(res)], bad).toEqual([400, 'validation_failed']);
        expect(res.json<ErrorBody>().error.details?.['path'], bad).toBe('/inbound_rules/0/devices/0');
      }
    });
  });
});
