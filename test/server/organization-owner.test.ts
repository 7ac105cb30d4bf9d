/**
 * Issue 36, part 1: every organization has an owner, or one invited
 * (docs/protocol.md "Members and roles"). The admin token naming no owner
 * gets an owner invitation claimed by its token; `owner_user_id` makes an
 * existing user the owner at once; `owner_email` invites by email; a user
 * creating one is its owner. `POST /api/invitations/accept` claims a token
 * invitation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USER_SELF, paths, type CreatedApiKey, type CreatedOrganization, type Invitation, type Member } from '../../src/protocol/index.js';
import { acceptInvitations } from '../../src/server/store/index.js';
import { runAudited } from '../../src/server/audit/index.js';
import { errorCode, Harness, startTestServer, uniqueName, type InjectResponse } from './fixtures.js';
import { createUserForTest } from './support/users.js';
import { auditRows } from './audit/audit-support.js';

const outcome = (res: InjectResponse): string => `${res.statusCode}${errorCode(res) ? ` ${errorCode(res)}` : ''}`;

describe('the owner of a new organization (PGlite)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = new Harness(await startTestServer('pglite'));
  });
  afterAll(async () => {
    await h.server.close();
  });

  const create = (body: Record<string, unknown>, token?: string) => h.call('POST', paths.organizations(), { token: token ?? h.admin, body: { name: uniqueName(), ...body } });
  const members = (org: string) => h.ok<{ items: Member[] }>(200, 'GET', paths.members(org));

  it('the admin token naming no owner gets an owner invitation, claimed once by whoever signs in with its token', async () => {
    const res = await create({});
    expect(outcome(res)).toBe('201');
    const org = res.json<CreatedOrganization>();
    const invitation = org.owner_invitation;
    expect(invitation).toMatchObject({ organization_id: org.id, role: 'owner', email: null, subject: null, created_by: 'admin' });
    expect(invitation?.token).toMatch(/^fpi_/);
    // Pending: no owner yet, the invitation open (its secret never listed).
    expect((await members(org.id)).items).toEqual([]);
    const open = await h.ok<{ items: Invitation[] }>(200, 'GET', paths.invitations(org.id));
    expect(open.items.map((i) => i.id)).toEqual([invitation?.id]);
    expect(JSON.stringify(open)).not.toContain(invitation?.token);
    const created = (await auditRows(h, org.id)).find((r) => r.action === 'create' && r.kind === 'organization');
    expect(created?.details).toEqual({ owner_invitation_id: invitation?.id });

    const user = await createUserForTest(h.server.db);
    const accepted = await h.call('POST', paths.acceptInvitation(), { token: user.session, body: { token: invitation?.token } });
    expect(outcome(accepted)).toBe('200');
    expect(accepted.json<Member>()).toMatchObject({ user_id: user.id, organization_id: org.id, role: 'owner' });
    expect((await members(org.id)).items.map((m) => [m.user_id, m.role])).toEqual([[user.id, 'owner']]);
    expect((await h.ok<{ items: Invitation[] }>(200, 'GET', paths.invitations(org.id))).items).toEqual([]);
    // Used once.
    const again = await createUserForTest(h.server.db);
    expect(outcome(await h.call('POST', paths.acceptInvitation(), { token: again.session, body: { token: invitation?.token } }))).toBe('404 not_found');
    // From then on the organization keeps an owner.
    expect(outcome(await h.call('DELETE', paths.member(org.id, user.id), { token: h.admin }))).toBe('409 conflict');
    const acceptedRow = (await auditRows(h, org.id)).find((r) => r.action === 'update' && r.kind === 'invitation');
    expect(acceptedRow).toMatchObject({ object_id: invitation?.id, actor_type: 'user', actor_id: user.id, details: { accepted_by: user.id, role: 'owner' } });
  });

  it('owner_user_id makes an existing user the owner at once; an unknown one, or both fields, is 400', async () => {
    const user = await createUserForTest(h.server.db);
    const res = await create({ owner_user_id: user.id });
    expect(outcome(res)).toBe('201');
    const org = res.json<CreatedOrganization>();
    expect(org.owner_invitation).toBeUndefined();
    expect((await members(org.id)).items.map((m) => [m.user_id, m.role])).toEqual([[user.id, 'owner']]);
    expect((await h.ok<{ items: Invitation[] }>(200, 'GET', paths.invitations(org.id))).items).toEqual([]);
    expect(outcome(await create({ owner_user_id: '00000000-0000-4000-8000-000000000000' }))).toBe('400 validation_failed');
    expect(outcome(await create({ owner_user_id: user.id, owner_email: 'a@example.test' }))).toBe('400 validation_failed');
  });

  it('owner_email invites by email, accepted at that user’s next login', async () => {
    const res = await create({ owner_email: 'Boss@Example.test' });
    const org = res.json<CreatedOrganization>();
    expect(org.owner_invitation).toMatchObject({ email: 'Boss@Example.test', role: 'owner' });
    expect(org.owner_invitation?.token).toBeUndefined();
    const user = await createUserForTest(h.server.db, { email: 'boss@example.test' });
    const signingIn = { type: 'user', id: user.id, credentialId: null } as const;
    await runAudited({ actor: () => Promise.resolve(signingIn), source: null, userAgent: null }, () =>
      acceptInvitations(h.server.db, { id: user.id, email: user.email, emailVerified: true, subject: user.subject }, signingIn),
    );
    expect((await members(org.id)).items.map((m) => [m.user_id, m.role])).toEqual([[user.id, 'owner']]);
  });

  it('a server admin creating an organization is its owner, with no invitation', async () => {
    const admin = await createUserForTest(h.server.db, { serverAdmin: true });
    const org = (await create({}, admin.session)).json<CreatedOrganization>();
    expect(org.owner_invitation).toBeUndefined();
    expect((await members(org.id)).items.map((m) => [m.user_id, m.role])).toEqual([[admin.id, 'owner']]);
  });

  it('accepting by token: a user session only; an unknown, revoked or expired token is 404', async () => {
    const org = (await create({})).json<CreatedOrganization>();
    const token = org.owner_invitation?.token ?? '';
    const user = await createUserForTest(h.server.db);
    const key = await h.ok<CreatedApiKey>(201, 'POST', paths.userApiKeys(USER_SELF), {
      token: user.session,
      body: { organizations: [(await create({ owner_user_id: user.id })).json<CreatedOrganization>().id], role: 'read' },
    });
    expect(outcome(await h.call('POST', paths.acceptInvitation(), { token: key.key, body: { token } }))).toBe('403 forbidden');
    expect(outcome(await h.call('POST', paths.acceptInvitation(), { token: h.admin, body: { token } }))).toBe('403 forbidden');
    expect(outcome(await h.call('POST', paths.acceptInvitation(), { body: { token } }))).toBe('401 unauthorized');
    expect(outcome(await h.call('POST', paths.acceptInvitation(), { token: user.session, body: { token: 'fpi_unknown' } }))).toBe('404 not_found');
    // Revoked, then a new one made by the admin token (owner pending still): the old token is dead, the new one works.
    const invitationId = org.owner_invitation?.id ?? '';
    await h.ok(204, 'DELETE', paths.invitation(org.id, invitationId));
    expect(outcome(await h.call('POST', paths.acceptInvitation(), { token: user.session, body: { token } }))).toBe('404 not_found');
    const fresh = await h.ok<{ id: string; token: string }>(201, 'POST', paths.invitations(org.id), { body: { role: 'owner', expires_in: 60 } });
    await h.server.db.query(`UPDATE invitations SET expires_at = now() - interval '1 second' WHERE id = $1`, [fresh.id]);
    expect(outcome(await h.call('POST', paths.acceptInvitation(), { token: user.session, body: { token: fresh.token } }))).toBe('404 not_found');
    const last = await h.ok<{ token: string }>(201, 'POST', paths.invitations(org.id), { body: { role: 'owner' } });
    expect(outcome(await h.call('POST', paths.acceptInvitation(), { token: user.session, body: { token: last.token } }))).toBe('200');
  });
});
