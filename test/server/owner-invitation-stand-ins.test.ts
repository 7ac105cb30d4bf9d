/**
 * Issue 37: the owner invitations claimed by token that the admin token
 * makes while an organization has no owner stand in for one; when its first
 * owner joins another way (made owner, another invitation accepted by
 * token or at login) they are revoked, so the invitations list holds only
 * what is still pending and no owner token stays claimable
 * (docs/protocol.md "Members and roles").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNER_JOINED, paths, type CreatedInvitation, type CreatedOrganization, type Invitation } from '../../src/protocol/index.js';
import { runAudited } from '../../src/server/audit/index.js';
import { acceptInvitations } from '../../src/server/store/index.js';
import { Harness, startTestServer, uniqueName } from './fixtures.js';
import { addMemberForTest, createUserForTest } from './support/users.js';
import { auditRows } from './audit/audit-support.js';

describe('owner invitations that stand in for an owner', () => {
  let h: Harness;
  beforeAll(async () => {
    h = new Harness(await startTestServer('pglite'));
  });
  afterAll(async () => {
    await h.server.close();
  });

  /** An organization the admin token made naming no owner, and its owner invitation (claimed by token). */
  const ownerless = async (): Promise<{ org: string; standIn: string }> => {
    const org = await h.ok<CreatedOrganization>(201, 'POST', paths.organizations(), { body: { name: uniqueName() } });
    return { org: org.id, standIn: org.owner_invitation?.id ?? '' };
  };
  const invite = (org: string, body: Record<string, unknown>) => h.ok<CreatedInvitation>(201, 'POST', paths.invitations(org), { body });
  const open = async (org: string): Promise<string[]> => (await h.ok<{ items: Invitation[] }>(200, 'GET', paths.invitations(org))).items.map((i) => i.id);
  const revokedFor = async (org: string): Promise<unknown[]> =>
    (await auditRows(h, org)).filter((r) => r.action === 'revoke' && r.kind === 'invitation').map((r) => [r.object_id, r.details]);

  it('a member made the first owner ends them; an owner invitation by email stays, and one made once there is an owner', async () => {
    const { org, standIn } = await ownerless();
    const again = await invite(org, { role: 'owner' });
    const byEmail = await invite(org, { role: 'owner', email: 'boss@example.test' });
    const byRead = await invite(org, { role: 'read' });
    expect(await open(org)).toEqual([standIn, again.id, byEmail.id, byRead.id]);
    const user = await createUserForTest(h.server.db);
    await addMemberForTest(h.server.db, org, user.id, 'admin');
    await h.ok(200, 'PATCH', paths.member(org, user.id), { body: { role: 'owner' } });
    expect(await open(org)).toEqual([byEmail.id, byRead.id]);
    const details = { reason: OWNER_JOINED, owner_user_id: user.id };
    expect(await revokedFor(org)).toEqual([[standIn, details], [again.id, details]]);

    // An owner invitation by token made now is meant: a second owner does not end it.
    const meant = await invite(org, { role: 'owner' });
    const second = await createUserForTest(h.server.db);
    await addMemberForTest(h.server.db, org, second.id, 'read');
    await h.ok(200, 'PATCH', paths.member(org, second.id), { body: { role: 'owner' } });
    expect(await open(org)).toEqual([byEmail.id, byRead.id, meant.id]);
  });

  it('accepting another owner invitation by token ends them; a read invitation accepted does not', async () => {
    const { org, standIn } = await ownerless();
    const reader = await invite(org, { role: 'read' });
    const owner = await invite(org, { role: 'owner' });
    await h.ok(200, 'POST', paths.acceptInvitation(), { token: (await createUserForTest(h.server.db)).session, body: { token: reader.token } });
    expect(await open(org)).toEqual([standIn, owner.id]);
    const user = await createUserForTest(h.server.db);
    await h.ok(200, 'POST', paths.acceptInvitation(), { token: user.session, body: { token: owner.token } });
    expect(await open(org)).toEqual([]);
    expect(await revokedFor(org)).toEqual([[standIn, { reason: OWNER_JOINED, owner_user_id: user.id }]]);
  });

  it('an owner invitation by email accepted at login ends them, by the user signing in', async () => {
    const { org, standIn } = await ownerless();
    const email = `owner-${uniqueName()}@example.test`;
    await invite(org, { role: 'owner', email });
    const user = await createUserForTest(h.server.db, { email });
    const signingIn = { type: 'user', id: user.id, credentialId: null } as const;
    await runAudited({ actor: () => Promise.resolve(signingIn), source: null, userAgent: null }, () =>
      acceptInvitations(h.server.db, { id: user.id, email, emailVerified: true, subject: user.subject }, signingIn),
    );
    expect(await open(org)).toEqual([]);
    const [revoked] = (await auditRows(h, org)).filter((r) => r.action === 'revoke');
    expect(revoked).toMatchObject({ object_id: standIn, actor_type: 'user', actor_id: user.id, details: { reason: OWNER_JOINED } });
  });
});
