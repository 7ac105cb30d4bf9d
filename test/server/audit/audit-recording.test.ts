/**
 * Issue 13: every change records who made it, in the transaction of the
 * change (docs/protocol.md "Audit log").
 */
import { describe, expect, it } from 'vitest';
import { paths, type DeviceTokenRenewal } from '../../../src/protocol/index.js';
import { MissingAuditScopeError, runAudited, SYSTEM_SCOPE } from '../../../src/server/audit/index.js';
import { backends, useServer } from '../fixtures.js';
import { auditCount, auditRows } from './audit-support.js';

describe.each(backends())('audit recording on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);

    it('records the admin token, an organization token, a registration key and a device as actors, with source and user agent', async () => {
      const s = h();
      const org = await s.createOrg();
      const adminToken = await s.ok<{ id: string; token: string }>(201, 'POST', paths.tokens(org.id), { body: { role: 'admin' } });
      const group = await s.ok<{ id: string; revision: number }>(201, 'POST', paths.securityGroups(org.id), {
        token: adminToken.token,
        body: { description: 'web' },
        headers: { 'user-agent': 'audit-test/1.0' },
      });
      const key = await s.createRegKey(org.id);
      const device = await s.createDevice(org.id, {}, key.key);
      const patched = await s.ok<{ revision: number }>(200, 'PATCH', paths.device(org.id, device.id), {
        token: device.device_token,
        body: { endpoints: [{ source: 'stun', address: '192.0.2.1:51820' }] },
      });
      const renewal = await s.call('POST', paths.deviceToken(org.id, device.id), { token: device.device_token });
      expect(renewal.statusCode, renewal.body).toBe(201);
      const renewed = renewal.json<DeviceTokenRenewal>();
      expect(renewed.device_token).toBeTruthy();

      const rows = await auditRows(s, org.id);
      expect(rows.map((r) => [r.action, r.kind, r.actor_type])).toEqual([
        ['create', 'organization', 'admin'],
        ['create', 'token', 'admin'],
        ['create', 'security_group', 'token'],
        ['create', 'registration_key', 'admin'],
        ['create', 'device', 'registration_key'],
        ['update', 'device', 'device'],
        ['renew', 'device_token', 'device'],
      ]);
      const [orgRow, tokenRow, groupRow, , enrollRow, patchRow] = rows;
      expect(orgRow).toMatchObject({ object_id: org.id, actor_id: null, credential_id: null, source: '127.0.0.1' });
      expect(Number(orgRow?.revision)).toBe(org.revision);
      expect(tokenRow).toMatchObject({ object_id: adminToken.id, revision: null, details: { role: 'admin' } });
      expect(groupRow).toMatchObject({
        object_id: group.id,
        actor_id: adminToken.id,
        credential_id: adminToken.id,
        user_agent: 'audit-test/1.0',
      });
      expect(Number(groupRow?.revision)).toBe(group.revision);
      expect(enrollRow).toMatchObject({ object_id: device.id, actor_id: key.id, details: { registration_key_id: key.id } });
      expect(patchRow).toMatchObject({ object_id: device.id, actor_id: device.id, details: { fields: ['endpoints'] } });
      expect(Number(patchRow?.revision)).toBe(patched.revision);
      // Never a secret in an entry.
      const text = JSON.stringify(rows);
      for (const secret of [adminToken.token, key.key, device.device_token, renewed.device_token]) expect(text).not.toContain(secret);
    });

    it('a user agent is cut to 256 characters', async () => {
      const s = h();
      const org = await s.createOrg();
      await s.ok(201, 'POST', paths.securityGroups(org.id), { body: {}, headers: { 'user-agent': 'x'.repeat(5000) } });
      const rows = await auditRows(s, org.id);
      expect(rows.at(-1)?.user_agent).toBe('x'.repeat(256));
    });

    it('route approval, updates and deletes are recorded with their revision and changed fields', async () => {
      const s = h();
      const org = await s.createOrg();
      const key = await s.createRegKey(org.id);
      const device = await s.createDevice(org.id, { advertise_cidrs: ['10.9.0.0/24'] }, key.key);
      const approved = await s.ok<{ revision: number }>(200, 'PATCH', paths.device(org.id, device.id), { body: { approved_cidrs: ['10.9.0.0/24'] } });
      const renamed = await s.ok<{ revision: number }>(200, 'PATCH', paths.organization(org.id), { body: { description: 'lab' } });
      // A PATCH that changes nothing takes no revision and records nothing.
      await s.ok(200, 'PATCH', paths.organization(org.id), { body: { description: 'lab' } });
      await s.ok(204, 'DELETE', paths.device(org.id, device.id));
      await s.ok(204, 'DELETE', paths.registrationKey(org.id, key.id));
      await s.ok(204, 'DELETE', paths.organization(org.id));
      const rows = (await auditRows(s, org.id)).slice(3);
      expect(rows.map((r) => [r.action, r.kind, r.object_id, r.revision === null ? null : Number(r.revision), r.details])).toEqual([
        ['approve', 'device', device.id, approved.revision, { fields: ['approved_cidrs'], changes: { approved_cidrs: { from: [], to: ['10.9.0.0/24'] } } }],
        ['update', 'organization', org.id, renamed.revision, { fields: ['description'], changes: { description: { from: '', to: 'lab' } } }],
        ['delete', 'device', device.id, renamed.revision + 1, {}],
        ['delete', 'registration_key', key.id, null, {}],
        ['delete', 'organization', org.id, renamed.revision + 2, {}],
      ]);
    });

    it('a failing write leaves no audit entry', async () => {
      const s = h();
      const org = await s.createOrg();
      const key = await s.createRegKey(org.id);
      await s.createDevice(org.id, {}, key.key);
      const before = await auditCount(s);
      expect((await s.call('DELETE', paths.organization(org.id), { token: s.admin })).statusCode).toBe(409);
      expect((await s.call('DELETE', paths.securityGroup(org.id, org.id), { token: s.admin })).statusCode).toBe(404);
      expect((await s.call('PATCH', paths.organization(org.id), { token: s.admin, body: { network: { ipv4_cidr: '10.0.0.0/24' } } })).statusCode).toBe(409);
      expect(await auditCount(s)).toBe(before);
    });

    it('an audit insert that fails rolls the write back', async () => {
      const s = h();
      const org = await s.createOrg();
      const head = await s.head(org.id);
      // The injected failure: the audit table refuses entries about security groups and tokens.
      await s.server.db.query(`ALTER TABLE audit_log ADD CONSTRAINT audit_test_refuse CHECK (kind NOT IN ('security_group', 'token')) NOT VALID`);
      try {
        expect((await s.call('POST', paths.securityGroups(org.id), { token: s.admin, body: { description: 'lost' } })).statusCode).toBe(500);
        expect((await s.call('POST', paths.tokens(org.id), { token: s.admin, body: { role: 'read' } })).statusCode).toBe(500);
      } finally {
        await s.server.db.query('ALTER TABLE audit_log DROP CONSTRAINT audit_test_refuse');
      }
      expect(await s.head(org.id)).toBe(head);
      expect((await s.ok<{ items: unknown[] }>(200, 'GET', paths.securityGroups(org.id))).items).toEqual([]);
      expect((await s.ok<{ items: unknown[] }>(200, 'GET', paths.tokens(org.id))).items).toEqual([]);
    });

    it('a store write outside any audit scope is a loud error and changes nothing', async () => {
      const s = h();
      const org = await s.createOrg();
      const head = await s.head(org.id);
      await expect(s.server.ctx.store.securityGroups.create(org.id, {})).rejects.toBeInstanceOf(MissingAuditScopeError);
      expect(await s.head(org.id)).toBe(head);
      // The server's own writes run in the system scope.
      const group = await runAudited(SYSTEM_SCOPE, () => s.server.ctx.store.securityGroups.create(org.id, {}));
      expect((await auditRows(s, org.id)).at(-1)).toMatchObject({ object_id: group.id, actor_type: 'system', actor_id: null, source: null });
    });

    it('concurrent writes of different principals each record their own actor', async () => {
      const s = h();
      const org = await s.createOrg();
      const tokens = await Promise.all([0, 1, 2, 3].map(async () => s.ok<{ id: string; token: string }>(201, 'POST', paths.tokens(org.id), { body: { role: 'admin' } })));
      const made = await Promise.all(
        Array.from({ length: 24 }, async (_, i) => {
          const t = tokens[i % tokens.length];
          if (t === undefined) throw new Error('no token');
          const group = await s.ok<{ id: string }>(201, 'POST', paths.securityGroups(org.id), { token: t.token, body: { description: `g${i}` } });
          return [group.id, t.id] as const;
        }),
      );
      const rows = await auditRows(s, org.id);
      const byObject = new Map(rows.filter((r) => r.kind === 'security_group').map((r) => [r.object_id, r.actor_id]));
      expect(byObject.size).toBe(made.length);
      for (const [group, token] of made) expect(byObject.get(group)).toBe(token);
    });
  });
});
