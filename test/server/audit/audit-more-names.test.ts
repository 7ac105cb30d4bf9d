/**
 * Issue 37 (v1.25): the kinds whose entries still had no `object_name` name
 * their object too: an invitation who it is for (its email, else its
 * subject; null for one claimed by token), a device token its device's
 * hostname, a session its description, a user its email, else its name
 * (docs/protocol.md "Audit log").
 */
import { describe, expect, it } from 'vitest';
import { AUDIT_REDACTED, paths, type AuditEntry, type AuditList, type CreatedInvitation, type CreatedOrganization, type CreatedSession } from '../../../src/protocol/index.js';
import { runAudited, SYSTEM_SCOPE } from '../../../src/server/audit/index.js';
import type { LoginIdentity } from '../../../src/server/store/index.js';
import { uniqueName, useServer, type Harness } from '../fixtures.js';
import { addMemberForTest, createSessionForTest, createUserForTest } from '../support/users.js';
import { auditPage } from './audit-support.js';

/** `[action, object_name]` of every entry of `kind` about `object`, oldest first (organization entries; the server's with `org` undefined). */
async function namesOf(s: Harness, kind: string, object: string, org?: string): Promise<[string, string | null][]> {
  const page: AuditList = org === undefined ? await s.ok<AuditList>(200, 'GET', paths.audit(), { query: { object } }) : await auditPage(s, org, { object });
  return page.items
    .filter((e: AuditEntry) => e.kind === kind)
    .reverse()
    .map((e: AuditEntry) => [e.action, e.object_name]);
}

const NO_ADMINS = { emails: [], subjects: [] };
const terms = (description: string) => ({ ttlSeconds: 600, maxAgeSeconds: 3600, source: '192.0.2.1', userAgent: undefined, description });
const identity = (over: Partial<LoginIdentity> = {}): LoginIdentity => ({
  issuer: 'https://idp.test',
  subject: `s-${uniqueName()}`,
  email: undefined,
  emailVerified: true,
  name: undefined,
  ...over,
});
const signIn = (s: Harness, who: LoginIdentity, description = 'browser'): Promise<CreatedSession> =>
  runAudited(SYSTEM_SCOPE, () => s.server.ctx.store.logins.signIn(who, NO_ADMINS, terms(description)));

describe('names of invitations, device tokens, sessions and users in the audit log', () => {
  const h = useServer('pglite');

  it('an invitation is named by its email, else its subject, made, revoked and accepted; one claimed by token by nothing', async () => {
    const s = h();
    const org = (await s.createOrg()).id;
    const invite = (body: Record<string, unknown>) => s.ok<CreatedInvitation>(201, 'POST', paths.invitations(org), { body: { role: 'read', ...body } });

    const revoked = await invite({ email: 'gone@example.test' });
    await s.ok(204, 'DELETE', paths.invitation(org, revoked.id));
    expect(await namesOf(s, 'invitation', revoked.id, org)).toEqual([['create', 'gone@example.test'], ['revoke', 'gone@example.test']]);

    // Accepted at a login: by the verified email, and by the subject.
    const email = `new-${uniqueName()}@example.test`;
    const subject = `s-${uniqueName()}`;
    const byEmail = await invite({ email });
    const bySubject = await invite({ subject });
    await signIn(s, identity({ subject, email }));
    expect(await namesOf(s, 'invitation', byEmail.id, org)).toEqual([['create', email], ['update', email]]);
    expect(await namesOf(s, 'invitation', bySubject.id, org)).toEqual([['create', subject], ['update', subject]]);

    // Claimed by token: it is for whoever holds the token, and names nothing.
    const byToken = await invite({});
    const user = await createUserForTest(s.server.db);
    await s.ok(200, 'POST', paths.acceptInvitation(), { token: user.session, body: { token: byToken.token } });
    expect(await namesOf(s, 'invitation', byToken.id, org)).toEqual([['create', null], ['update', null]]);
  });

  it('one by subject is named, made and revoked; the owner stand-ins (claimed by token) the first owner ends keep null', async () => {
    const s = h();
    const org = await s.ok<CreatedOrganization>(201, 'POST', paths.organizations(), { body: { name: uniqueName() } });
    const standIn = org.owner_invitation?.id ?? '';
    const bySubject = await s.ok<CreatedInvitation>(201, 'POST', paths.invitations(org.id), { body: { role: 'owner', subject: 'oidc|42' } });
    await s.ok(204, 'DELETE', paths.invitation(org.id, bySubject.id));
    expect(await namesOf(s, 'invitation', bySubject.id, org.id)).toEqual([['create', 'oidc|42'], ['revoke', 'oidc|42']]);
    const user = await createUserForTest(s.server.db);
    await addMemberForTest(s.server.db, org.id, user.id, 'admin');
    await s.ok(200, 'PATCH', paths.member(org.id, user.id), { body: { role: 'owner' } });
    expect(await namesOf(s, 'invitation', standIn, org.id)).toEqual([['revoke', null]]);
  });

  it("a device token is named by its device's hostname, renewed and expired", async () => {
    const s = h();
    const org = (await s.createOrg()).id;
    const device = await s.createDevice(org, { hostname: 'edge-7' });
    await s.ok(201, 'POST', paths.deviceToken(org, device.id), { token: device.device_token });
    await s.ok(204, 'DELETE', paths.deviceToken(org, device.id));
    expect(await namesOf(s, 'device_token', device.id, org)).toEqual([['renew', 'edge-7'], ['revoke', 'edge-7']]);
  });

  it('a session is named by its description, made, renewed, revoked and pushed out; a user by its email, else its name', async () => {
    const s = h();
    const mailed = await signIn(s, identity({ email: `u-${uniqueName()}@example.test`, name: 'Ada' }), 'ctl');
    await s.ok(200, 'POST', paths.authSessionRefresh(), { token: mailed.token });
    await s.ok(204, 'POST', paths.authLogout(), { token: mailed.token });
    expect(await namesOf(s, 'session', mailed.session.id)).toEqual([['create', 'ctl'], ['renew', 'ctl'], ['revoke', 'ctl']]);
    expect(await namesOf(s, 'user', mailed.user.id)).toEqual([['create', mailed.user.email]]);

    const unmailed = await signIn(s, identity({ name: 'Grace' }), 'browser');
    expect(await namesOf(s, 'user', unmailed.user.id)).toEqual([['create', 'Grace']]);
    expect(await namesOf(s, 'session', unmailed.session.id)).toEqual([['create', 'browser']]);
    // Past MAX_SESSIONS_PER_USER (50) live sessions, a login revokes the oldest: its first one.
    for (let i = 0; i < 49; i++) await createSessionForTest(s.server.db, unmailed.user.id);
    const again = await signIn(s, identity({ subject: unmailed.user.subject, name: 'Grace' }), 'agent');
    expect(await namesOf(s, 'session', unmailed.session.id)).toEqual([['create', 'browser'], ['revoke', 'browser']]);
    expect(await namesOf(s, 'session', again.session.id)).toEqual([['create', 'agent']]);
  });

  it('a session revoked by id is named; a description holding an issued secret is redacted', async () => {
    const s = h();
    const org = (await s.createOrg()).id;
    const secret = await s.createToken(org, 'read');
    const made = await signIn(s, identity({ name: 'Lin' }), `pasted ${secret}`);
    await s.ok(204, 'DELETE', paths.userSession('me', made.session.id), { token: made.token });
    expect(await namesOf(s, 'session', made.session.id)).toEqual([['create', AUDIT_REDACTED], ['revoke', AUDIT_REDACTED]]);
  });
});
