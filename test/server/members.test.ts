/**
 * Members, invitations and personal API keys through the routes (PGlite,
 * `app.inject`), invitation acceptance at login (the store function the
 * login calls), and the last-owner rule under concurrency on PGlite and real
 * PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MAX_API_KEY_TTL_SECONDS,
  MAX_OPEN_INVITATIONS,
  USER_SELF,
  paths,
  type ApiKey,
  type CreatedApiKey,
  type Invitation,
  type Member,
  type Organization,
} from '../../src/protocol/index.js';
import { acceptInvitations } from '../../src/server/store/index.js';
import { runAudited } from '../../src/server/audit/index.js';
import { removeMember, setMemberRole } from '../../src/server/store/members.js';
import { backends, Harness, startTestServer, useServer } from './fixtures.js';
import { addMemberForTest, createUserForTest, type TestUser } from './support/users.js';

const outcome = (res: { statusCode: number; body: string }): string => {
  const code = (() => {
    try {
      return (JSON.parse(res.body) as { error?: { code?: string } }).error?.code;
    } catch {
      return undefined;
    }
  })();
  return `${res.statusCode}${code ? ` ${code}` : ''}`;
};

describe('members, invitations and API keys (PGlite)', () => {
  let h: Harness;
  let org: Organization;
  let owner: TestUser;
  let admin: TestUser;
  let reader: TestUser;

  beforeAll(async () => {
    h = new Harness(await startTestServer('pglite'));
    const serverAdmin = await createUserForTest(h.server.db, { serverAdmin: true });
    // A server admin's session creates the organization: it becomes the owner.
    const res = await h.call('POST', paths.organizations(), { token: serverAdmin.session, body: { name: 'people' } });
    expect(res.statusCode).toBe(201);
    org = res.json<Organization>();
    owner = serverAdmin;
    admin = await createUserForTest(h.server.db);
    reader = await createUserForTest(h.server.db);
    await addMemberForTest(h.server.db, org.id, admin.id, 'admin');
    await addMemberForTest(h.server.db, org.id, reader.id, 'read');
  });

  afterAll(async () => {
    await h.server.close();
  });

  it("an organization's creator is its owner; members are listed with their roles", async () => {
    const members = await h.ok<{ items: Member[] }>(200, 'GET', paths.members(org.id), { token: reader.session });
    const roles = Object.fromEntries(members.items.map((m) => [m.user_id, m.role]));
    expect(roles).toEqual({ [owner.id]: 'owner', [admin.id]: 'admin', [reader.id]: 'read' });
    expect(members.items.find((m) => m.user_id === admin.id)?.email).toBe(admin.email);
  });

  it('GET /api/organizations lists only the caller’s organizations (an API key: only its own among them)', async () => {
    const other = await h.createOrg();
    await addMemberForTest(h.server.db, other.id, reader.id, 'read');
    const list = async (token: string): Promise<string[]> =>
      (await h.ok<{ items: Organization[] }>(200, 'GET', paths.organizations(), { token })).items.map((o) => o.id).sort();
    expect(await list(reader.session)).toEqual([org.id, other.id].sort());
    expect(await list(admin.session)).toEqual([org.id]);
    const key = await h.ok<CreatedApiKey>(201, 'POST', paths.userApiKeys(USER_SELF), { token: reader.session, body: { organizations: [other.id], role: 'read' } });
    expect(await list(key.key)).toEqual([other.id]);
    const stranger = await createUserForTest(h.server.db);
    expect(await list(stranger.session)).toEqual([]);
    // The server admin, as the admin token: every organization.
    expect((await list(owner.session)).length).toBeGreaterThanOrEqual(2);
  });

  it('admins manage admin and read members, never owners; owners manage everyone', async () => {
    const target = await createUserForTest(h.server.db);
    await addMemberForTest(h.server.db, org.id, target.id, 'read');
    const patch = (token: string, user: string, role: string) => h.call('PATCH', paths.member(org.id, user), { token, body: { role } });
    expect(outcome(await patch(admin.session, target.id, 'admin'))).toBe('200');
    expect(outcome(await patch(admin.session, target.id, 'owner'))).toBe('403 forbidden');
    expect(outcome(await patch(admin.session, owner.id, 'read'))).toBe('403 forbidden');
    expect(outcome(await h.call('DELETE', paths.member(org.id, owner.id), { token: admin.session }))).toBe('403 forbidden');
    expect(outcome(await patch(reader.session, target.id, 'read'))).toBe('403 forbidden');
    expect(outcome(await patch(owner.session, target.id, 'owner'))).toBe('200');
    // Two owners: one may step down; then the last may not, by role change or removal.
    expect(outcome(await patch(owner.session, target.id, 'read'))).toBe('200');
    expect(outcome(await patch(owner.session, owner.id, 'admin'))).toBe('409 conflict');
    expect(outcome(await h.call('DELETE', paths.member(org.id, owner.id), { token: owner.session }))).toBe('409 conflict');
    expect(outcome(await h.call('DELETE', paths.member(org.id, target.id), { token: admin.session }))).toBe('204');
    expect(outcome(await h.call('DELETE', paths.member(org.id, target.id), { token: admin.session }))).toBe('404 not_found');
  });

  it('member, invitation and API key writes are audited with their actor, in their transaction; a refused one leaves no entry', async () => {
    const target = await createUserForTest(h.server.db);
    await addMemberForTest(h.server.db, org.id, target.id, 'read');
    const entries = () =>
      h.server.db.query<{ action: string; kind: string; actor_type: string; actor_id: string | null; credential_id: string | null }>(
        `SELECT action, kind, actor_type, actor_id, credential_id FROM audit_log WHERE object_id = $1 ORDER BY id`,
        [target.id],
      );
    await h.ok(200, 'PATCH', paths.member(org.id, target.id), { token: admin.session, body: { role: 'admin' } });
    expect(outcome(await h.call('PATCH', paths.member(org.id, target.id), { token: admin.session, body: { role: 'owner' } }))).toBe('403 forbidden');
    await h.ok(204, 'DELETE', paths.member(org.id, target.id), { token: owner.session });
    const got = await entries();
    expect(got.map((e) => `${e.action} ${e.kind} ${e.actor_type}:${e.actor_id ?? ''}`)).toEqual([
      `update member user:${admin.id}`,
      `delete member user:${owner.id}`,
    ]);
    const key = await h.ok<CreatedApiKey>(201, 'POST', paths.userApiKeys(USER_SELF), { token: target.session, body: { organizations: [org.id], role: 'read' } }).catch(
      (err: unknown) => err,
    );
    // No longer a member: the key cannot name the organization, and nothing is recorded.
    expect(key).toBeInstanceOf(Error);
    const keyEntries = await h.server.db.query(`SELECT 1 FROM audit_log WHERE kind = 'api_key' AND actor_id = $1`, [target.id]);
    expect(keyEntries).toEqual([]);
  });

  it('a removed member loses access at once, its sessions and its API keys alike; a demoted one is narrowed at once', async () => {
    const user = await createUserForTest(h.server.db);
    await addMemberForTest(h.server.db, org.id, user.id, 'admin');
    const key = await h.ok<CreatedApiKey>(201, 'POST', paths.userApiKeys(USER_SELF), { token: user.session, body: { organizations: [org.id], role: 'admin' } });
    for (const token of [user.session, key.key]) expect(outcome(await h.call('GET', paths.tokens(org.id), { token }))).toBe('200');
    await h.ok(200, 'PATCH', paths.member(org.id, user.id), { token: owner.session, body: { role: 'read' } });
    for (const token of [user.session, key.key]) {
      expect(outcome(await h.call('GET', paths.tokens(org.id), { token }))).toBe('403 forbidden');
      expect(outcome(await h.call('GET', paths.organization(org.id), { token }))).toBe('200');
    }
    await h.ok(204, 'DELETE', paths.member(org.id, user.id), { token: owner.session });
    for (const token of [user.session, key.key]) expect(outcome(await h.call('GET', paths.organization(org.id), { token }))).toBe('404 not_found');
  });

  it('invitations: by email or subject, bounded in lifetime; admins may not invite owners; listed while open; revocable', async () => {
    const invite = (token: string, body: Record<string, unknown>) => h.call('POST', paths.invitations(org.id), { token, body });
    const byEmail = await invite(admin.session, { email: 'New.Person@Example.test', role: 'admin' });
    expect(outcome(byEmail)).toBe('201');
    const inv = byEmail.json<Invitation>();
    expect(inv.created_by).toBe(`user:${admin.id}`);
    expect(Date.parse(inv.expires_at) - Date.parse(inv.created_at)).toBeGreaterThan(6.9 * 86400_000);
    expect(Date.parse(inv.expires_at) - Date.parse(inv.created_at)).toBeLessThan(7.1 * 86400_000);
    expect(outcome(await invite(admin.session, { subject: 'sub-1', role: 'owner' }))).toBe('403 forbidden');
    expect(outcome(await invite(owner.session, { subject: 'sub-1', role: 'owner', expires_in: 3600 }))).toBe('201');
    // Neither email nor subject: an invitation claimed by its token, shown once.
    const byToken = await invite(owner.session, { role: 'read' });
    expect(outcome(byToken)).toBe('201');
    expect(byToken.json<{ token: string }>().token).toMatch(/^fpi_/);
    expect(outcome(await invite(owner.session, { email: 'a@b.c', subject: 'x', role: 'read' }))).toBe('400 validation_failed');
    expect(outcome(await invite(owner.session, { email: 'a@b.c', role: 'read', expires_in: 365 * 86400 }))).toBe('400 validation_failed');
    expect(outcome(await invite(owner.session, { email: 'a@b.c', role: 'read', expires_at: new Date(Date.now() + 40 * 86400_000).toISOString() }))).toBe(
      '400 validation_failed',
    );
    expect(outcome(await invite(reader.session, { email: 'a@b.c', role: 'read' }))).toBe('403 forbidden');
    const open = await h.ok<{ items: Invitation[] }>(200, 'GET', paths.invitations(org.id), { token: admin.session });
    expect(open.items.map((i) => i.id)).toContain(inv.id);
    const ownerInvite = open.items.find((i) => i.role === 'owner');
    if (!ownerInvite) throw new Error('no owner invitation');
    expect(outcome(await h.call('DELETE', paths.invitation(org.id, ownerInvite.id), { token: admin.session }))).toBe('403 forbidden');
    expect(outcome(await h.call('DELETE', paths.invitation(org.id, inv.id), { token: admin.session }))).toBe('204');
    expect(outcome(await h.call('DELETE', paths.invitation(org.id, inv.id), { token: admin.session }))).toBe('404 not_found');
    const after = await h.ok<{ items: Invitation[] }>(200, 'GET', paths.invitations(org.id), { token: admin.session });
    expect(after.items.map((i) => i.id)).not.toContain(inv.id);
  });

  it(`an organization has at most ${MAX_OPEN_INVITATIONS} open invitations (409 past it); expired ones do not count`, async () => {
    // With its owner named: no owner invitation counts.
    const o = await h.createOrg({ owner_user_id: owner.id });
    await h.server.db.query(
      `INSERT INTO invitations (id, org_id, subject, role, created_by, expires_at)
       SELECT gen_random_uuid(), $1, 'bulk-' || g, 'read', 'admin', now() + interval '1 day' FROM generate_series(1, $2::int - 1) g`,
      [o.id, MAX_OPEN_INVITATIONS],
    );
    await h.server.db.query(
      `INSERT INTO invitations (id, org_id, subject, role, created_by, expires_at) VALUES (gen_random_uuid(), $1, 'gone', 'read', 'admin', now() - interval '1 second')`,
      [o.id],
    );
    expect(outcome(await h.call('POST', paths.invitations(o.id), { token: h.admin, body: { subject: 'last', role: 'read' } }))).toBe('201');
    expect(outcome(await h.call('POST', paths.invitations(o.id), { token: h.admin, body: { subject: 'one-more', role: 'read' } }))).toBe('409 conflict');
    const n = await h.server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM invitations WHERE org_id = $1', [o.id]);
    expect(n[0]?.n).toBe(MAX_OPEN_INVITATIONS + 1);
  });

  it('API keys: shown once, listed without the secret, bounded expiry, only for organizations the user is in, revocable', async () => {
    const create = (token: string, body: Record<string, unknown>, user = USER_SELF) => h.call('POST', paths.userApiKeys(user), { token, body });
    const made = await create(admin.session, { organizations: [org.id], role: 'read', description: 'ci' });
    expect(outcome(made)).toBe('201');
    const key = made.json<CreatedApiKey>();
    expect(key.key.startsWith('fpk_')).toBe(true);
    // Default lifetime: 90 days.
    expect(Math.round((Date.parse(key.expires_at) - Date.parse(key.created_at)) / 86400_000)).toBe(90);
    const listed = await h.ok<{ items: ApiKey[] }>(200, 'GET', paths.userApiKeys(USER_SELF), { token: admin.session });
    expect(listed.items.map((k) => k.id)).toContain(key.id);
    expect(JSON.stringify(listed)).not.toContain(key.key);
    // Read through the key; a key mints no key.
    expect(outcome(await h.call('GET', paths.devices(org.id), { token: key.key }))).toBe('200');
    expect(outcome(await create(key.key, { organizations: [org.id], role: 'read' }))).toBe('403 forbidden');
    const tooLong = new Date(Date.now() + (MAX_API_KEY_TTL_SECONDS + 86400) * 1000).toISOString();
    expect(outcome(await create(admin.session, { organizations: [org.id], role: 'read', expires_at: tooLong }))).toBe('400 validation_failed');
    expect(outcome(await create(admin.session, { organizations: [org.id], role: 'read', expires_at: new Date(Date.now() - 1000).toISOString() }))).toBe(
      '400 validation_failed',
    );
    expect(outcome(await create(admin.session, { organizations: [], role: 'read' }))).toBe('400 validation_failed');
    const notMine = await h.createOrg();
    expect(outcome(await create(admin.session, { organizations: [notMine.id], role: 'read' }))).toBe('404 not_found');
    // Another user's keys: 404 for a user; the admin token lists and revokes, but creates none.
    expect(outcome(await h.call('GET', paths.userApiKeys(admin.id), { token: reader.session }))).toBe('404 not_found');
    expect(outcome(await h.call('GET', paths.userApiKeys(admin.id), { token: h.admin }))).toBe('200');
    expect(outcome(await h.call('GET', paths.userApiKeys(USER_SELF), { token: h.admin }))).toBe('404 not_found');
    expect(outcome(await create(h.admin, { organizations: [org.id], role: 'read' }, admin.id))).toBe('403 forbidden');
    expect(outcome(await h.call('DELETE', paths.userApiKey(admin.id, key.id), { token: h.admin }))).toBe('204');
    expect(outcome(await h.call('GET', paths.devices(org.id), { token: key.key }))).toBe('401 unauthorized');
    expect(outcome(await h.call('DELETE', paths.userApiKey(USER_SELF, key.id), { token: admin.session }))).toBe('404 not_found');
  });
});

describe('accepting invitations at login (PGlite)', () => {
  const h = useServer('pglite');

  it('accepts open invitations by subject, or by email only when verified and case-insensitively; never expired or revoked ones', async () => {
    const s = h();
    const db = s.server.db;
    // Each with an owner, so that only the invitations made here are open.
    const boss = await createUserForTest(db);
    const withOwner = () => s.createOrg({ owner_user_id: boss.id });
    const [a, b, c, d] = [await withOwner(), await withOwner(), await withOwner(), await withOwner()];
    const user = await createUserForTest(db, { email: 'Dana@Example.test' });
    const invite = (orgId: string, who: { email?: string; subject?: string }, role: string, extra = '') =>
      db.query(
        `INSERT INTO invitations (id, org_id, email, subject, role, created_by, expires_at${extra ? ', revoked_at' : ''})
         VALUES (gen_random_uuid(), $1, $2, $3, $4, 'admin', now() + interval '1 day'${extra ? ', now()' : ''})`,
        [orgId, who.email ?? null, who.subject ?? null, role],
      );
    await invite(a.id, { email: 'dana@EXAMPLE.test' }, 'read');
    await invite(a.id, { subject: user.subject }, 'admin');
    await invite(b.id, { subject: user.subject }, 'read', 'revoked');
    await db.query(
      `INSERT INTO invitations (id, org_id, subject, role, created_by, expires_at) VALUES (gen_random_uuid(), $1, $2, 'owner', 'admin', now() - interval '1 second')`,
      [c.id, user.subject],
    );
    await invite(d.id, { email: 'dana@example.test' }, 'read');

    const unverified = { id: user.id, email: user.email, emailVerified: false, subject: user.subject };
    const signingIn = { type: 'user', id: user.id, credentialId: null } as const;
    // As at a login: the route's scope gives the address, the user signing in is the actor.
    const accept = (u: typeof unverified): Promise<number> =>
      runAudited({ actor: () => Promise.resolve(signingIn), source: '192.0.2.7', userAgent: null }, () => acceptInvitations(db, u, signingIn));
    expect(await accept(unverified)).toBe(1);
    const roles = async (): Promise<Record<string, string>> =>
      Object.fromEntries((await db.query<{ org_id: string; role: string }>('SELECT org_id, role FROM memberships WHERE user_id = $1', [user.id])).map((r) => [r.org_id, r.role]));
    expect(await roles()).toEqual({ [a.id]: 'admin' });

    expect(await accept({ ...unverified, emailVerified: true })).toBe(2);
    // The higher role is kept: the email's read invitation does not lower the subject's admin.
    expect(await roles()).toEqual({ [a.id]: 'admin', [d.id]: 'read' });
    expect(await accept({ ...unverified, emailVerified: true })).toBe(0);

    // An accepted invitation is no longer listed as open.
    const open = await s.ok<{ items: Invitation[] }>(200, 'GET', paths.invitations(a.id));
    expect(open.items).toEqual([]);
    // A member invited higher is raised.
    await invite(d.id, { subject: user.subject }, 'owner');
    expect(await accept(unverified)).toBe(1);
    expect((await roles())[d.id]).toBe('owner');
    // Every accepted invitation is an audit entry of the user signing in, in its organization.
    const accepted = await db.query<{ org_id: string; object_id: string }>(
      `SELECT org_id, object_id FROM audit_log WHERE kind = 'invitation' AND action = 'update' AND actor_type = 'user' AND actor_id = $1 ORDER BY id`,
      [user.id],
    );
    expect(accepted.map((r) => r.org_id).sort()).toEqual([a.id, a.id, d.id, d.id].sort());
  });
});

describe.each(backends())('the last owner under concurrency on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);

    it('concurrent demotions and removals of every owner leave exactly one', async () => {
      const s = h();
      const db = s.server.db;
      for (let round = 0; round < 8; round++) {
        const org = await s.createOrg();
        const owners: TestUser[] = [];
        for (let i = 0; i < 3; i++) {
          const u = await createUserForTest(db);
          await addMemberForTest(db, org.id, u.id, 'owner');
          owners.push(u);
        }
        const all = { owners: true };
        const results = await Promise.allSettled(
          owners.map((u, i) =>
            db.transaction(async (tx): Promise<void> => {
              if (i % 2 === 0) await setMemberRole(tx, org.id, u.id, 'read', all);
              else await removeMember(tx, org.id, u.id, all);
            }),
          ),
        );
        const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as { code?: string }] : []));
        expect(refused.map((e) => e.code)).toEqual(['conflict']);
        const left = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM memberships WHERE org_id = $1 AND role = 'owner'`, [org.id]);
        expect(left[0]?.n).toBe(1);
      }
    });
  });
});

