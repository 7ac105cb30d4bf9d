/**
 * Issue 36, part 1: no credential outlives what made it (docs/protocol.md
 * "Credentials and what made them"). Organization tokens and registration
 * keys record their maker; revoking the maker (a token, a session), or
 * removing or demoting the member it rests on, revokes what it made, at any
 * depth, in the same transaction, audited with the cause; a maker's expiry
 * refuses what it made; personal API keys mint nothing; an owner re-parents.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USER_SELF, paths, type CreatedApiKey, type CreatedOrgToken, type CreatedRegistrationKey, type OrgToken, type RegistrationKey } from '../../src/protocol/index.js';
import { runAudited } from '../../src/server/audit/index.js';
import { errorCode, Harness, startTestServer, uniqueName, wgKey, type InjectResponse } from './fixtures.js';
import { addMemberForTest, createSessionForTest, createUserForTest, type TestUser } from './support/users.js';
import { auditRows } from './audit/audit-support.js';

const outcome = (res: InjectResponse): string => `${res.statusCode}${errorCode(res) ? ` ${errorCode(res)}` : ''}`;

/** Polls `check` until it holds or `ms` passed (a wait limit, not a measurement). */
async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('credentials and what made them (PGlite)', () => {
  let h: Harness;
  let owner: TestUser;

  beforeAll(async () => {
    h = new Harness(await startTestServer('pglite'));
    owner = await createUserForTest(h.server.db);
  });

  afterAll(async () => {
    await h.server.close();
  });

  /** A fresh organization with `owner` as its owner and an `admin` member. */
  async function world(): Promise<{ org: string; admin: TestUser }> {
    const org = (await h.createOrg({ owner_user_id: owner.id })).id;
    const admin = await createUserForTest(h.server.db);
    await addMemberForTest(h.server.db, org, admin.id, 'admin');
    return { org, admin };
  }

  const mintToken = (org: string, token: string, role = 'admin') => h.ok<CreatedOrgToken>(201, 'POST', paths.tokens(org), { token, body: { role } });
  const mintKey = (org: string, token: string) => h.ok<CreatedRegistrationKey>(201, 'POST', paths.registrationKeys(org), { token, body: {} });
  const useToken = async (org: string, token: string) => outcome(await h.call('GET', paths.tokens(org), { token }));
  const enroll = async (org: string, key: string) => outcome(await h.call('POST', paths.devices(org), { token: key, body: { hostname: uniqueName('h'), public_key: wgKey() } }));

  it('a personal API key may not mint organization tokens or registration keys, whatever its role (the issue’s reproduction)', async () => {
    const { org, admin } = await world();
    for (const [user, role] of [
      [admin, 'admin'],
      [owner, 'owner'],
    ] as const) {
      const key = await h.ok<CreatedApiKey>(201, 'POST', paths.userApiKeys(USER_SELF), { token: user.session, body: { organizations: [org], role } });
      const token = await h.call('POST', paths.tokens(org), { token: key.key, body: { role: 'admin' } });
      expect(outcome(token)).toBe('403 forbidden');
      expect(token.json<{ error: { message: string } }>().error.message).toMatch(/API key may not create organization tokens or registration keys/);
      expect(outcome(await h.call('POST', paths.registrationKeys(org), { token: key.key, body: {} }))).toBe('403 forbidden');
      // It still does what it may: list the tokens.
      expect(outcome(await h.call('GET', paths.tokens(org), { token: key.key }))).toBe('200');
    }
    expect((await h.ok<{ items: OrgToken[] }>(200, 'GET', paths.tokens(org))).items).toEqual([]);
  });

  it('records what made each token and key: the admin token, a token, a session and its user', async () => {
    const { org, admin } = await world();
    const byAdmin = await mintToken(org, h.admin);
    expect(byAdmin.created_by).toEqual({ credential_kind: 'admin', credential_id: null, user_id: null });
    const session = await h.ok<{ session: { id: string } }>(200, 'GET', paths.authSession(), { token: admin.session });
    const bySession = await mintToken(org, admin.session);
    expect(bySession.created_by).toEqual({ credential_kind: 'session', credential_id: session.session.id, user_id: admin.id });
    const byToken = await mintToken(org, bySession.token, 'read');
    expect(byToken.created_by).toEqual({ credential_kind: 'token', credential_id: bySession.id, user_id: admin.id });
    const key = await mintKey(org, bySession.token);
    expect(key.created_by).toEqual({ credential_kind: 'token', credential_id: bySession.id, user_id: admin.id });
    const listed = await h.ok<{ items: OrgToken[] }>(200, 'GET', paths.tokens(org));
    expect(listed.items.find((t) => t.id === byToken.id)?.created_by).toEqual(byToken.created_by);
    const keys = await h.ok<{ items: RegistrationKey[] }>(200, 'GET', paths.registrationKeys(org));
    expect(keys.items.find((k) => k.id === key.id)?.created_by).toEqual(key.created_by);
  });

  it('revoking a token revokes what it made, at any depth, and deletes the keys it made; audited with the cause', async () => {
    const { org, admin } = await world();
    const t1 = await mintToken(org, admin.session);
    const t2 = await mintToken(org, t1.token);
    const t3 = await mintToken(org, t2.token, 'read');
    const key = await mintKey(org, t2.token);
    const sibling = await mintToken(org, admin.session);
    expect(await useToken(org, t2.token)).toBe('200');
    await h.ok(204, 'DELETE', paths.token(org, t1.id));
    expect(await useToken(org, t1.token)).toBe('401 unauthorized');
    expect(await useToken(org, t2.token)).toBe('401 unauthorized');
    expect(outcome(await h.call('GET', paths.devices(org), { token: t3.token }))).toBe('401 unauthorized');
    expect(await enroll(org, key.key)).toBe('401 unauthorized');
    expect(await useToken(org, sibling.token)).toBe('200');
    const listed = (await h.ok<{ items: OrgToken[] }>(200, 'GET', paths.tokens(org))).items.map((t) => t.id);
    expect(listed).not.toContain(t2.id);
    expect(listed).toContain(sibling.id);

    const rows = (await auditRows(h, org)).filter((r) => r.action === 'revoke' || (r.action === 'delete' && r.kind === 'registration_key'));
    const cause = { kind: 'token', id: t1.id };
    expect(rows).toEqual([
      expect.objectContaining({ action: 'revoke', kind: 'token', object_id: t1.id, actor_type: 'admin', details: {} }),
      expect.objectContaining({ action: 'revoke', kind: 'token', object_id: t2.id, actor_type: 'admin', details: { cause, created_by: { credential_kind: 'token', credential_id: t1.id } } }),
      expect.objectContaining({ action: 'revoke', kind: 'token', object_id: t3.id, actor_type: 'admin', details: { cause, created_by: { credential_kind: 'token', credential_id: t2.id } } }),
      expect.objectContaining({ action: 'delete', kind: 'registration_key', object_id: key.id, details: { cause, created_by: { credential_kind: 'token', credential_id: t2.id } } }),
    ]);
  });

  it('revoking a session (or logging out) revokes what it made', async () => {
    const { org, admin } = await world();
    const other = await createSessionForTest(h.server.db, admin.id);
    const session = await h.ok<{ session: { id: string } }>(200, 'GET', paths.authSession(), { token: admin.session });
    const token = await mintToken(org, admin.session);
    const below = await mintToken(org, token.token, 'read');
    const key = await mintKey(org, admin.session);
    const elsewhere = await mintToken(org, other);
    await h.ok(204, 'DELETE', paths.userSession(USER_SELF, session.session.id), { token: other });
    expect(await useToken(org, token.token)).toBe('401 unauthorized');
    expect(outcome(await h.call('GET', paths.devices(org), { token: below.token }))).toBe('401 unauthorized');
    expect(await enroll(org, key.key)).toBe('401 unauthorized');
    // Another session's tokens stay.
    expect(await useToken(org, elsewhere.token)).toBe('200');
    const causes = (await auditRows(h, org)).filter((r) => r.details['cause'] !== undefined).map((r) => [r.object_id, r.details['cause']]);
    const cause = { kind: 'session', id: session.session.id };
    expect(causes).toEqual([
      [token.id, cause],
      [below.id, cause],
      [key.id, cause],
    ]);
    // Logging out is a revocation too.
    const logout = await mintToken(org, other);
    await h.ok(204, 'POST', paths.authLogout(), { token: other });
    expect(await useToken(org, logout.token)).toBe('401 unauthorized');
    expect(await useToken(org, elsewhere.token)).toBe('401 unauthorized');
  });

  it('removing a member, or demoting it to read, revokes the tokens and keys resting on it', async () => {
    const { org, admin } = await world();
    const token = await mintToken(org, admin.session);
    const below = await mintToken(org, token.token);
    const key = await mintKey(org, admin.session);
    const byAdminToken = await mintToken(org, h.admin);
    await h.ok(204, 'DELETE', paths.member(org, admin.id), { token: owner.session });
    expect(await useToken(org, token.token)).toBe('401 unauthorized');
    expect(await useToken(org, below.token)).toBe('401 unauthorized');
    expect(await enroll(org, key.key)).toBe('401 unauthorized');
    expect(await useToken(org, byAdminToken.token)).toBe('200');
    const cause = { kind: 'member', id: admin.id, change: 'removed' };
    const ended = (await auditRows(h, org)).filter((r) => r.details['cause'] !== undefined);
    expect(ended.map((r) => [r.action, r.kind, r.object_id, r.actor_type, r.actor_id, r.details['cause']])).toEqual([
      ['revoke', 'token', token.id, 'user', owner.id, cause],
      ['revoke', 'token', below.id, 'user', owner.id, cause],
      ['delete', 'registration_key', key.id, 'user', owner.id, cause],
    ]);

    const demoted = await createUserForTest(h.server.db);
    await addMemberForTest(h.server.db, org, demoted.id, 'admin');
    const made = await mintToken(org, demoted.session);
    const kept = await createUserForTest(h.server.db);
    await addMemberForTest(h.server.db, org, kept.id, 'admin');
    const keptToken = await mintToken(org, kept.session);
    await h.ok(200, 'PATCH', paths.member(org, demoted.id), { token: owner.session, body: { role: 'read' } });
    expect(await useToken(org, made.token)).toBe('401 unauthorized');
    // Another member's tokens, and a change that is no demotion to read, leave theirs.
    await h.ok(200, 'PATCH', paths.member(org, kept.id), { token: owner.session, body: { role: 'owner' } });
    expect(await useToken(org, keptToken.token)).toBe('200');
  });

  it('an owner re-parents a token or key to itself: it outlives its maker, and what it made moves with it', async () => {
    const { org, admin } = await world();
    const secondOwner = await createUserForTest(h.server.db);
    await addMemberForTest(h.server.db, org, secondOwner.id, 'owner');
    const session = await createSessionForTest(h.server.db, admin.id);
    const token = await mintToken(org, session);
    const below = await mintToken(org, token.token, 'read');
    const key = await mintKey(org, session);

    // Owners only, and not with an API key.
    expect(outcome(await h.call('POST', paths.tokenReparent(org, token.id), { token: admin.session }))).toBe('403 forbidden');
    expect(outcome(await h.call('POST', paths.tokenReparent(org, token.id), { token: token.token }))).toBe('403 forbidden');
    const ownerKey = await h.ok<CreatedApiKey>(201, 'POST', paths.userApiKeys(USER_SELF), { token: owner.session, body: { organizations: [org], role: 'owner' } });
    expect(outcome(await h.call('POST', paths.tokenReparent(org, token.id), { token: ownerKey.key }))).toBe('403 forbidden');

    const moved = await h.ok<OrgToken>(200, 'POST', paths.tokenReparent(org, token.id), { token: owner.session });
    expect(moved.created_by).toEqual({ credential_kind: 'user', credential_id: null, user_id: owner.id });
    const movedKey = await h.ok<RegistrationKey>(200, 'POST', paths.registrationKeyReparent(org, key.id), { token: owner.session });
    expect(movedKey.created_by).toEqual({ credential_kind: 'user', credential_id: null, user_id: owner.id });
    const listedBelow = (await h.ok<{ items: OrgToken[] }>(200, 'GET', paths.tokens(org))).items.find((t) => t.id === below.id);
    expect(listedBelow?.created_by).toEqual({ credential_kind: 'token', credential_id: token.id, user_id: owner.id });

    // Its maker's session revoked, and the member who made it removed: it stays, and so does what it made.
    await h.ok(204, 'POST', paths.authLogout(), { token: session });
    await h.ok(204, 'DELETE', paths.member(org, admin.id), { token: owner.session });
    expect(await useToken(org, token.token)).toBe('200');
    expect(outcome(await h.call('GET', paths.devices(org), { token: below.token }))).toBe('200');
    expect(await enroll(org, key.key)).toBe('201');
    const update = (await auditRows(h, org)).find((r) => r.action === 'update' && r.object_id === token.id);
    const from = { credential_kind: 'session', credential_id: expect.any(String), user_id: admin.id };
    const to = { credential_kind: 'user', credential_id: null, user_id: owner.id };
    expect(update?.details).toEqual({ fields: ['created_by'], changes: { created_by: { from, to } }, from, to });

    // It now rests on the owner: removed, it goes.
    await h.ok(204, 'DELETE', paths.member(org, owner.id), { token: secondOwner.session });
    expect(await useToken(org, token.token)).toBe('401 unauthorized');
    expect(outcome(await h.call('GET', paths.devices(org), { token: below.token }))).toBe('401 unauthorized');
    await addMemberForTest(h.server.db, org, owner.id, 'owner');

    // The admin token re-parents to nothing; a revoked token is no longer there to re-parent.
    const other = await mintToken(org, secondOwner.session);
    const toAdmin = await h.ok<OrgToken>(200, 'POST', paths.tokenReparent(org, other.id));
    expect(toAdmin.created_by).toEqual({ credential_kind: 'admin', credential_id: null, user_id: null });
    expect(outcome(await h.call('POST', paths.tokenReparent(org, token.id), { token: h.admin }))).toBe('404 not_found');
  });

  it('a token or key whose maker expired is refused, and works again once an owner re-parents it', async () => {
    const { org } = await world();
    // A maker that expires within seconds: waiting for it is a wait on a condition, with a limit.
    const maker = await h.ok<CreatedOrgToken>(201, 'POST', paths.tokens(org), { body: { role: 'admin', expires_at: new Date(Date.now() + 6_000).toISOString() } });
    const made = await mintToken(org, maker.token);
    const key = await mintKey(org, maker.token);
    expect(made.expires_at).toBeNull();
    expect(await useToken(org, made.token)).toBe('200');
    await until(async () => (await useToken(org, maker.token)) === '401 unauthorized', 20_000, 'the maker expires');
    expect(await useToken(org, made.token)).toBe('401 unauthorized');
    expect(await enroll(org, key.key)).toBe('401 unauthorized');
    expect(outcome(await h.call('GET', paths.ownRegistrationKey(), { token: key.key }))).toBe('401 unauthorized');
    // Not revoked: still listed, and an owner may keep it.
    expect((await h.ok<{ items: OrgToken[] }>(200, 'GET', paths.tokens(org))).items.map((t) => t.id)).toContain(made.id);
    await h.ok(200, 'POST', paths.tokenReparent(org, made.id), { token: owner.session });
    await h.ok(200, 'POST', paths.registrationKeyReparent(org, key.id), { token: owner.session });
    expect(await useToken(org, made.token)).toBe('200');
    expect(await enroll(org, key.key)).toBe('201');
  });

  it('a token made in a session is refused once that session expired', async () => {
    const { org, admin } = await world();
    const session = await createSessionForTest(h.server.db, admin.id, 6);
    const made = await mintToken(org, session);
    await until(async () => (await useToken(org, session)) === '401 unauthorized', 20_000, 'the session expires');
    expect(await useToken(org, made.token)).toBe('401 unauthorized');
  });

  it('a maker no longer in the database (revoked, then compacted away) still refuses what it made', async () => {
    const { org } = await world();
    const maker = await mintToken(org, h.admin);
    const key = await mintKey(org, maker.token);
    const made = await mintToken(org, maker.token);
    // As if its revocation had missed what it made, and compaction then deleted it.
    await h.server.db.query('DELETE FROM tokens WHERE id = $1', [maker.id]);
    h.server.ctx.store.tokens.revoke([made.id]);
    expect(await useToken(org, made.token)).toBe('401 unauthorized');
    expect(await enroll(org, key.key)).toBe('401 unauthorized');
  });

  it('a maker revoked before the mint commits refuses it (401): nothing minted escapes its maker', async () => {
    const { org, admin } = await world();
    const token = await mintToken(org, admin.session);
    await h.server.db.query('UPDATE tokens SET revoked_at = now() WHERE id = $1', [token.id]);
    const scope = { actor: () => Promise.resolve({ type: 'token' as const, id: token.id, credentialId: token.id }), source: null, userAgent: null };
    await expect(
      runAudited(scope, () => h.server.ctx.store.credentials.createOrgToken(org, { role: 'read' }, { kind: 'token', credentialId: token.id })),
    ).rejects.toMatchObject({ code: 'unauthorized' });
    expect((await h.ok<{ items: OrgToken[] }>(200, 'GET', paths.tokens(org))).items.map((t) => t.id)).not.toContain(token.id);
    // A maker further up counts as much: its session revoked (its cascade not yet run), a token it made mints nothing.
    const session = await createSessionForTest(h.server.db, admin.id);
    const below = await mintToken(org, session);
    await h.server.db.query('UPDATE tokens SET revoked_at = now() WHERE id = (SELECT maker_chain[1] FROM tokens WHERE id = $1)', [below.id]);
    await expect(
      runAudited(scope, () => h.server.ctx.store.credentials.createOrgToken(org, { role: 'read' }, { kind: 'token', credentialId: below.id })),
    ).rejects.toMatchObject({ code: 'unauthorized' });
  });

  it("a session mints as a member only while the member is an admin or owner when the mint commits", async () => {
    const { org, admin } = await world();
    const session = await h.ok<{ session: { id: string } }>(200, 'GET', paths.authSession(), { token: admin.session });
    await h.server.db.query(`UPDATE memberships SET role = 'read' WHERE org_id = $1 AND user_id = $2`, [org, admin.id]);
    const scope = { actor: () => Promise.resolve({ type: 'user' as const, id: admin.id, credentialId: session.session.id }), source: null, userAgent: null };
    await expect(
      runAudited(scope, () =>
        h.server.ctx.store.credentials.createOrgToken(org, { role: 'read' }, { kind: 'session', credentialId: session.session.id, userId: admin.id, asMember: true }),
      ),
    ).rejects.toMatchObject({ code: 'forbidden' });
  });
});
