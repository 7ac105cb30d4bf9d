/**
 * Issue 13: `GET /api/organizations/{org}/audit` pages by time or revision
 * and filters; admins read it, read principals only where granted; the
 * server-level log is the admin token's (docs/protocol.md "Audit log").
 */
import { describe, expect, it } from 'vitest';
import { paths, type AuditEntry, type AuditList, type Organization } from '../../../src/protocol/index.js';
import { backends, errorCode, useServer } from '../fixtures.js';
import { auditPage } from './audit-support.js';

describe.each(backends())('reading the audit log on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);

    it('pages newest first with a cursor, and by revision oldest first', async () => {
      const s = h();
      const org = await s.createOrg();
      const groups: string[] = [];
      for (let i = 0; i < 5; i++) groups.push((await s.createGroup(org.id, { description: `g${i}` })).id);
      const seen: AuditEntry[] = [];
      let next: string | undefined;
      let pages = 0;
      do {
        const page = await auditPage(s, org.id, { limit: '2', ...(next === undefined ? {} : { after: next }) });
        expect(page.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.items);
        next = page.next;
        pages++;
      } while (next !== undefined && pages < 10);
      // The organization's creation and five groups: six entries, three pages, newest first.
      expect(pages).toBe(3);
      expect(seen.map((e) => e.object_id)).toEqual([...groups].reverse().concat(org.id));
      expect(seen.every((e, i) => i === 0 || BigInt(e.id) < BigInt(seen[i - 1]?.id ?? '0'))).toBe(true);

      const third = seen.find((e) => e.object_id === groups[2]);
      const after = await auditPage(s, org.id, { gt_revision: String(third?.revision ?? 0) });
      expect(after.items.map((e) => e.object_id)).toEqual([groups[3], groups[4]]);
      const firstOfTwo = await auditPage(s, org.id, { gt_revision: '0', limit: '1' });
      expect(firstOfTwo.items.map((e) => e.object_id)).toEqual([org.id]);
      const rest = await auditPage(s, org.id, { gt_revision: '0', after: firstOfTwo.next ?? '' });
      expect(rest.items.map((e) => e.object_id)).toEqual(groups);
    });

    it('filters by actor, object, action, kind and time', async () => {
      const s = h();
      const org = await s.createOrg();
      const token = await s.ok<{ id: string; token: string }>(201, 'POST', paths.tokens(org.id), { body: { role: 'admin' } });
      const second = await s.ok<{ id: string; token: string }>(201, 'POST', paths.tokens(org.id), { body: { role: 'admin' } });
      const mine = await s.createGroup(org.id, {}, token.token);
      const seconds = await s.createGroup(org.id, {}, second.token);
      const theirs = await s.createGroup(org.id, {});
      await s.ok(204, 'DELETE', paths.securityGroup(org.id, theirs.id));
      const ids = (page: AuditList) => page.items.map((e) => `${e.action} ${e.object_id ?? ''}`);
      expect(ids(await auditPage(s, org.id, { actor: `token:${token.id}` }))).toEqual([`create ${mine.id}`]);
      expect(ids(await auditPage(s, org.id, { actor: 'token' }))).toEqual([`create ${seconds.id}`, `create ${mine.id}`]);
      expect(ids(await auditPage(s, org.id, { object: theirs.id }))).toEqual([`delete ${theirs.id}`, `create ${theirs.id}`]);
      expect(ids(await auditPage(s, org.id, { action: 'delete' }))).toEqual([`delete ${theirs.id}`]);
      expect(ids(await auditPage(s, org.id, { kind: 'token' }))).toEqual([`create ${second.id}`, `create ${token.id}`]);
      const all = await auditPage(s, org.id);
      const newest = all.items[0];
      expect(newest?.action).toBe('delete');
      expect((await auditPage(s, org.id, { since: newest?.at ?? '' })).items.map((e) => e.id)).toContain(newest?.id);
      expect((await auditPage(s, org.id, { until: '2000-01-01T00:00:00Z' })).items).toEqual([]);
      expect((await auditPage(s, org.id, { since: '2999-01-01T00:00:00Z' })).items).toEqual([]);
      const bad = await s.call('GET', paths.orgAudit(org.id), { token: s.admin, query: { actor: 'nobody:1' } });
      expect([bad.statusCode, errorCode(bad)]).toEqual([400, 'bad_request']);
      const badCursor = await s.call('GET', paths.orgAudit(org.id), { token: s.admin, query: { after: 'x1' } });
      expect([badCursor.statusCode, errorCode(badCursor)]).toEqual([400, 'bad_request']);
      const tooMany = await s.call('GET', paths.orgAudit(org.id), { token: s.admin, query: { limit: '501' } });
      expect(tooMany.statusCode).toBe(400);
    });

    it('admins read it; a read token only once the organization grants it; devices and other organizations never', async () => {
      const s = h();
      const org = await s.createOrg();
      expect(org.audit_readable_by_read).toBe(false);
      const admin = await s.createToken(org.id, 'admin');
      const read = await s.createToken(org.id, 'read');
      const device = await s.createDevice(org.id, {}, (await s.createRegKey(org.id)).key);
      const other = await s.createOrg();
      const otherAdmin = await s.createToken(other.id, 'admin');
      const status = async (token: string) => {
        const res = await s.call('GET', paths.orgAudit(org.id), { token });
        return [res.statusCode, errorCode(res)];
      };
      expect(await status(admin)).toEqual([200, undefined]);
      expect(await status(read)).toEqual([403, 'forbidden']);
      expect(await status(device.device_token)).toEqual([403, 'forbidden']);
      expect(await status(otherAdmin)).toEqual([404, 'not_found']);
      const granted = await s.ok<Organization>(200, 'PATCH', paths.organization(org.id), { body: { audit_readable_by_read: true } });
      expect(granted.audit_readable_by_read).toBe(true);
      expect(await status(read)).toEqual([200, undefined]);
      // Granting is itself in the log.
      const page = await auditPage(s, org.id, { action: 'update', kind: 'organization' });
      expect(page.items[0]?.details).toEqual({ fields: ['audit_readable_by_read'], changes: { audit_readable_by_read: { from: false, to: true } } });
    });

    it('GET /api/audit is the admin token\'s: every organization and the entries outside any', async () => {
      const s = h();
      const a = await s.createOrg();
      const b = await s.createOrg();
      const admin = await s.createToken(a.id, 'admin');
      const res = await s.call('GET', paths.audit(), { token: admin });
      expect([res.statusCode, errorCode(res)]).toEqual([403, 'forbidden']);
      const all = await s.ok<AuditList>(200, 'GET', paths.audit(), { query: { kind: 'organization', action: 'create', limit: '500' } });
      const orgs = all.items.map((e) => e.organization_id);
      expect(orgs).toContain(a.id);
      expect(orgs).toContain(b.id);
      const onlyB = await s.ok<AuditList>(200, 'GET', paths.audit(), { query: { organization: b.id } });
      expect(new Set(onlyB.items.map((e) => e.organization_id))).toEqual(new Set([b.id]));
      // A refused POST /api/organizations names no organization: it is in the server's log only.
      const refused = await s.call('POST', paths.organizations(), { token: admin, body: { name: 'nope' } });
      expect(refused.statusCode).toBe(403);
      const denied = await s.ok<AuditList>(200, 'GET', paths.audit(), { query: { action: 'denied', limit: '1' } });
      expect(denied.items[0]).toMatchObject({ organization_id: null, kind: 'route', object_id: 'POST /api/organizations' });
    });
  });
});
