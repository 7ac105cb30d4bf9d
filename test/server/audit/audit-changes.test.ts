/**
 * Issue 37 ("An audit browser"): an update's entry records each changed
 * field's value before and after, credentials redacted and long values cut
 * (`details.changes`), and every entry about an organization, device or
 * security group the object's name (`object_name`), kept after it is gone
 * (docs/protocol.md "Audit log").
 */
import { describe, expect, it } from 'vitest';
import { AUDIT_REDACTED, AUDIT_VALUE_MAX_BYTES, auditChanges, HEADERS, MEDIA, paths, type AuditEntry, type Rule } from '../../../src/protocol/index.js';
import { fieldChanges, isCredentialName, redact } from '../../../src/server/audit/index.js';
import { POLICY_SAMPLE } from '../../support/policy-sample.js';
import { useServer, uniqueName } from '../fixtures.js';
import { addMemberForTest, createUserForTest } from '../support/users.js';
import { auditPage, auditRows } from './audit-support.js';

const rule = (port: number): Rule => ({ ip_protocol: 'tcp', from_port: port, to_port: port, ip_ranges: ['10.0.0.0/8', '192.168.0.0/16'] });

describe('before and after values, and names, in the audit log', () => {
  const h = useServer('pglite');

  const entriesOf = async (org: string, object: string): Promise<AuditEntry[]> => (await auditPage(h(), org, { object, gt_revision: '0' })).items;

  it('an update records each changed field from and to, and the name after it', async () => {
    const s = h();
    const org = await s.createOrg();
    const group = await s.createGroup(org.id, { name: 'web', description: 'front' });
    await s.ok(200, 'PATCH', paths.securityGroup(org.id, group.id), { body: { name: 'web-2', description: 'front', applies_to: ['tag:web'] } });
    const [, update] = await entriesOf(org.id, group.id);
    expect(update).toMatchObject({ action: 'update', object_name: 'web-2' });
    expect(update?.details).toEqual({
      fields: ['applies_to', 'name'],
      changes: { applies_to: { from: [], to: ['tag:web'] }, name: { from: 'web', to: 'web-2' } },
    });
    expect(auditChanges(update?.details ?? {})).toEqual([
      ['applies_to', { from: [], to: ['tag:web'] }],
      ['name', { from: 'web', to: 'web-2' }],
    ]);
  });

  it('a device approval records the routes before and after under its hostname', async () => {
    const s = h();
    const org = await s.createOrg();
    const hostname = uniqueName('web');
    const device = await s.createDevice(org.id, { hostname, advertise_cidrs: ['10.9.0.0/24'] });
    await s.ok(200, 'PATCH', paths.device(org.id, device.id), { body: { approved_cidrs: ['10.9.0.0/24'] } });
    const [created, approved] = await entriesOf(org.id, device.id);
    expect(created).toMatchObject({ action: 'create', object_name: hostname });
    expect(approved).toMatchObject({ action: 'approve', object_name: hostname, details: { changes: { approved_cidrs: { from: [], to: ['10.9.0.0/24'] } } } });
  });

  it('an issued secret pasted into a field is redacted, before and after', async () => {
    const s = h();
    const org = await s.createOrg();
    const token = await s.createToken(org.id, 'read');
    const group = await s.createGroup(org.id, { description: 'plain' });
    await s.ok(200, 'PATCH', paths.securityGroup(org.id, group.id), { body: { description: `read with ${token}` } });
    await s.ok(200, 'PATCH', paths.securityGroup(org.id, group.id), { body: { description: 'rotated' } });
    const [, pasted, rotated] = await entriesOf(org.id, group.id);
    expect(pasted?.details['changes']).toEqual({ description: { from: 'plain', to: AUDIT_REDACTED } });
    expect(rotated?.details['changes']).toEqual({ description: { from: AUDIT_REDACTED, to: 'rotated' } });
    expect(JSON.stringify(await auditRows(s))).not.toContain(token);
  });

  it('a value whose JSON exceeds the bound is replaced by a marker with its size', async () => {
    const s = h();
    const org = await s.createOrg();
    const group = await s.createGroup(org.id, { inbound_rules: [rule(22)] });
    const many = Array.from({ length: 100 }, (_, i) => rule(1000 + i));
    const bytes = Buffer.byteLength(JSON.stringify(many));
    expect(bytes).toBeGreaterThan(AUDIT_VALUE_MAX_BYTES);
    await s.ok(200, 'PATCH', paths.securityGroup(org.id, group.id), { body: { inbound_rules: many } });
    const [, update] = await entriesOf(org.id, group.id);
    expect(update?.details['changes']).toEqual({ inbound_rules: { from: [rule(22)], to: { truncated: true, bytes } } });
  });

  it('a policy document applied and released records the organization fields it changed, from and to', async () => {
    const s = h();
    const org = await s.createOrg();
    await s.ok(200, 'PUT', paths.policy(org.id), { payload: POLICY_SAMPLE, headers: { [HEADERS.contentType]: MEDIA.yaml } });
    await s.ok(200, 'DELETE', paths.policy(org.id));
    const entries = await entriesOf(org.id, org.id);
    const [applied, released] = entries.filter((e) => e.action === 'update');
    expect(applied?.details).toMatchObject({
      policy: 'applied',
      fields: ['policy', 'tag_owners'],
      changes: { tag_owners: { from: {}, to: { 'tag:db': ['role:admin'], 'tag:web': ['role:admin'] } }, policy: { from: null, to: { groups: [expect.objectContaining({ name: 'db' })] } } },
    });
    expect(released?.details).toMatchObject({ policy: 'released', fields: ['policy'], changes: { policy: { from: { groups: [expect.objectContaining({ name: 'db' })] }, to: null } } });
    expect(applied?.object_name).toBe(org.name);
  });

  it("a member's new role records the role before and after", async () => {
    const s = h();
    const org = await s.createOrg();
    const user = await createUserForTest(s.server.db);
    await addMemberForTest(s.server.db, org.id, user.id, 'admin');
    await s.ok(200, 'PATCH', paths.member(org.id, user.id), { body: { role: 'read' } });
    const [entry] = (await auditPage(s, org.id, { object: user.id })).items;
    expect(entry).toMatchObject({ action: 'update', kind: 'member', details: { role: 'read', fields: ['role'], changes: { role: { from: 'admin', to: 'read' } } } });
  });

  it('create and delete record the name, which the entries keep after the object is gone', async () => {
    const s = h();
    const name = uniqueName('named');
    const org = await s.createOrg({ name });
    const group = await s.createGroup(org.id, { name: 'db' });
    const hostname = uniqueName('db');
    const device = await s.createDevice(org.id, { hostname });
    await s.ok(204, 'DELETE', paths.device(org.id, device.id));
    await s.ok(204, 'DELETE', paths.securityGroup(org.id, group.id));
    await s.ok(204, 'DELETE', paths.organization(org.id));
    const page = await s.ok<{ items: AuditEntry[] }>(200, 'GET', paths.audit(), { query: { organization: org.id, gt_revision: '0' } });
    expect(page.items.map((e) => [e.action, e.kind, e.object_name])).toEqual([
      ['create', 'organization', name],
      ['create', 'security_group', 'db'],
      ['create', 'device', hostname],
      ['delete', 'device', hostname],
      ['delete', 'security_group', 'db'],
      ['delete', 'organization', name],
    ]);
  });

  it('an entry written before names were recorded answers object_name null', async () => {
    const s = h();
    const org = await s.createOrg();
    await s.server.db.query(`INSERT INTO audit_log (org_id, actor_type, action, kind, object_id, revision) VALUES ($1::uuid, 'system', 'update', 'organization', $2, 1)`, [org.id, org.id]);
    const [old] = (await auditPage(s, org.id, { limit: '1' })).items;
    expect(old).toMatchObject({ object_id: org.id, object_name: null, details: {} });
  });
});

describe('redaction and bounds of recorded values', () => {
  it('names of credentials are redacted at any depth; their metadata and public keys are not', () => {
    expect(['secret_hash', 'token', 'device_token', 'password', 'clientSecret', 'private_key', 'credentials'].filter(isCredentialName)).toHaveLength(7);
    expect(['public_key', 'token_id', 'expires_at', 'description', 'name', 'tag:token', 'registration_key_id'].filter(isCredentialName)).toEqual([]);
    expect(redact({ a: [{ secret_hash: 'ab12', public_key: 'pk', note: null }], oidc: { client_secret: 's3', client_id: 'c' } })).toEqual({
      a: [{ secret_hash: AUDIT_REDACTED, public_key: 'pk', note: null }],
      oidc: { client_secret: AUDIT_REDACTED, client_id: 'c' },
    });
    expect(fieldChanges({ password: 'old', name: 'a' }, { password: 'new', name: 'a' })).toEqual({
      fields: ['password'],
      changes: { password: { from: AUDIT_REDACTED, to: AUDIT_REDACTED } },
    });
  });

  it('a value at the bound is kept; one byte over is a marker; absent is null', () => {
    const at = 'x'.repeat(AUDIT_VALUE_MAX_BYTES - 2);
    expect(fieldChanges({ d: at }, { d: `${at}y` }).changes['d']).toEqual({ from: at, to: { truncated: true, bytes: AUDIT_VALUE_MAX_BYTES + 1 } });
    expect(fieldChanges({}, { d: 'new' }).changes['d']).toEqual({ from: null, to: 'new' });
  });
});
