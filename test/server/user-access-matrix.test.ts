/**
 * Issue 13, "The auth matrix tests cover users, sessions and API keys on
 * every route, negative cases included": every REST and watch rule of the
 * access table (src/server/access/rules.ts), walked with the sessions of an
 * organization's owner, admin and read members, of a user who is no member,
 * of a server admin, and with personal API keys (a role narrower than the
 * membership, one broader, one for another organization, an expired one, a
 * revoked one). What each may do is read from the table with the kind the
 * caller is in that call (user-kind.ts); the server must answer accordingly.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTES, USER_SELF, paths, type CreatedApiKey, type Organization } from '../../src/protocol/index.js';
import { ACCESS_RULES, type AccessRule, type PrincipalKind } from '../../src/server/access/index.js';
import { hashSecret } from '../../src/server/store/index.js';
import { errorCode, Harness, startTestServer, type InjectResponse, type Method } from './fixtures.js';
import { addMemberForTest, createSessionForTest, createUserForTest, type TestUser } from './support/users.js';

/** How a caller is seen: a kind in organization A's routes, and one elsewhere; or an invalid credential. */
interface Caller {
  /** A fresh credential for each rule: a rule may end the one it is called with (logout). */
  token: () => Promise<string>;
  /** The kind in organization A's routes; `none`: not a member there (404). */
  inOrg: PrincipalKind | 'none';
  /** The kind on the caller's own user routes (`me`) and on routes with no organization. */
  outside: PrincipalKind;
  /** An expired or revoked credential: 401 everywhere a credential is needed. */
  invalid?: true;
  /** A personal API key: refused (403) where the grant excludes keys (minting credentials). */
  apiKey?: true;
}

const restRules = ACCESS_RULES.filter((r) => r.entry === 'rest' || r.entry === 'watch');
const label = (r: { method: string; route: string }): string => `${r.method} ${r.route}`;

/**
 * Where a route refines its rule by the organization's own settings: the
 * audit log lets `read` in only when the organization grants it (off here).
 */
const REFINED: Readonly<Record<string, Partial<Record<PrincipalKind, string>>>> = {
  [`GET ${ROUTES.orgAudit}`]: { 'org-read': '403 forbidden' },
};

/**
 * The kind a caller is outside organization A's routes: a server admin's
 * session is `admin`, but `user` on its own user's routes (`me`) and on the
 * rules made for sessions (naming `user`, not `admin`).
 */
function outsideKind(rule: AccessRule, c: Caller): PrincipalKind {
  if (c.outside !== 'admin') return c.outside;
  const forSessions = rule.allow !== 'anyone' && rule.allow.admin === undefined && rule.allow.user !== undefined;
  return rule.scope === 'user-in-path' || forSessions ? 'user' : 'admin';
}

function allows(rule: AccessRule, kind: PrincipalKind, apiKey = false): boolean {
  if (rule.allow === 'anyone') return true;
  const grant = rule.allow[kind];
  return grant !== undefined && !(apiKey && typeof grant === 'object' && 'noApiKey' in grant);
}

/** A path under `rule` its grant for `kind` covers (read-only agent methods), with ids nothing has. */
function pathFor(rule: AccessRule, org: string, kind: PrincipalKind | 'none', deviceId: string): string {
  const grant = rule.allow === 'anyone' || kind === 'none' ? undefined : rule.allow[kind];
  const methods = typeof grant === 'object' && 'methods' in grant ? grant.methods : undefined;
  const ownDevice = typeof grant === 'object' && 'ownDevice' in grant;
  return rule.route
    .replace(':org', org)
    .replace(':user', USER_SELF)
    .replace(':id', ownDevice ? deviceId : randomUUID())
    .replace(':method', methods?.[0] ?? 'ping');
}

function call(h: Harness, rule: AccessRule, url: string, token: string): Promise<InjectResponse> {
  // A body no schema accepts: an allowed caller gets its validation error, never a write or an open stream.
  const body = rule.method === 'GET' || rule.method === 'DELETE' ? undefined : { 'no-such-field': true };
  // The server's own Origin, as its dashboard sends: the cookie routes refuse any other before they look at anything.
  return h.call(rule.method as Method, url, { token, body, headers: { origin: 'http://localhost:80' } });
}

/** What a call got: past authorization (`passes`), or its refusal. */
function outcome(res: InjectResponse): string {
  const code = errorCode(res);
  const refusedOrg = res.statusCode === 404 && /organization not found|user not found/.test(res.body);
  if (res.statusCode === 401 || res.statusCode === 403 || refusedOrg) return `${res.statusCode} ${code ?? ''}`;
  return 'passes';
}

describe('users, sessions and API keys on every rule (PGlite)', () => {
  let h: Harness;
  let orgA: Organization;
  let orgB: Organization;
  let deviceId: string;
  const callers: Record<string, Caller> = {};

  const key = async (user: TestUser, body: { organizations: string[]; role: string; expires_at?: string }): Promise<CreatedApiKey> => {
    const res = await h.call('POST', paths.userApiKeys(USER_SELF), { token: user.session, body });
    if (res.statusCode !== 201) throw new Error(`create key: ${res.statusCode} ${res.body}`);
    return res.json<CreatedApiKey>();
  };

  beforeAll(async () => {
    h = new Harness(await startTestServer('pglite'));
    const db = h.server.db;
    orgA = await h.createOrg();
    orgB = await h.createOrg();
    // Devices and a group: the organization cannot be deleted (409) by a caller allowed to try.
    deviceId = (await h.createDevice(orgA.id)).id;
    await h.createGroup(orgA.id);
    const owner = await createUserForTest(db);
    const admin = await createUserForTest(db);
    const reader = await createUserForTest(db);
    const stranger = await createUserForTest(db);
    const serverAdmin = await createUserForTest(db, { serverAdmin: true });
    await addMemberForTest(db, orgA.id, owner.id, 'owner');
    await addMemberForTest(db, orgA.id, admin.id, 'admin');
    await addMemberForTest(db, orgA.id, reader.id, 'read');
    await addMemberForTest(db, orgB.id, admin.id, 'read');
    await addMemberForTest(db, orgB.id, stranger.id, 'admin');

    const narrower = await key(owner, { organizations: [orgA.id], role: 'read' });
    const ownerKey = await key(owner, { organizations: [orgA.id], role: 'owner' });
    const broader = await key(admin, { organizations: [orgA.id], role: 'owner' });
    const otherOrg = await key(admin, { organizations: [orgB.id], role: 'owner' });
    const revoked = await key(owner, { organizations: [orgA.id], role: 'owner' });
    const revoke = await h.call('DELETE', paths.userApiKey(USER_SELF, revoked.id), { token: owner.session });
    expect(revoke.statusCode).toBe(204);
    // Expired in the database, as one that ran out (created here, the token index would know its real expiry).
    const expired = `fpk_expired-${randomUUID()}`;
    await db.query(
      `INSERT INTO tokens (id, secret_hash, kind, user_id, org_ids, role, description, expires_at)
       VALUES ($1, $2, 'api_key', $3, $4::uuid[], 'owner', '', now() - interval '1 second')`,
      [randomUUID(), hashSecret(expired), owner.id, [orgA.id]],
    );
    const session = (user: TestUser) => () => createSessionForTest(db, user.id);
    const fixed = (secret: string) => () => Promise.resolve(secret);

    Object.assign(callers, {
      'owner session': { token: session(owner), inOrg: 'org-owner', outside: 'user' },
      'admin session': { token: session(admin), inOrg: 'org-admin', outside: 'user' },
      'read session': { token: session(reader), inOrg: 'org-read', outside: 'user' },
      'non-member session': { token: session(stranger), inOrg: 'none', outside: 'user' },
      'server admin session': { token: session(serverAdmin), inOrg: 'admin', outside: 'admin' },
      'key narrower than the membership (owner, key read)': { token: fixed(narrower.key), inOrg: 'org-read', outside: 'api-key', apiKey: true },
      'key broader than the membership (admin, key owner)': { token: fixed(broader.key), inOrg: 'org-admin', outside: 'api-key', apiKey: true },
      'key of another organization': { token: fixed(otherOrg.key), inOrg: 'none', outside: 'api-key', apiKey: true },
      'owner key (owner, key owner)': { token: fixed(ownerKey.key), inOrg: 'org-owner', outside: 'api-key', apiKey: true },
      'expired key': { token: fixed(expired), inOrg: 'none', outside: 'api-key', invalid: true },
      'revoked key': { token: fixed(revoked.key), inOrg: 'none', outside: 'api-key', invalid: true },
      'expired session': { token: () => createSessionForTest(db, owner.id, -1), inOrg: 'none', outside: 'user', invalid: true },
    } satisfies Record<string, Caller>);
  });

  afterAll(async () => {
    await h.server.close();
  });

  it('covers every REST and watch rule', () => {
    expect(restRules.length).toBeGreaterThan(30);
    expect(restRules.filter((r) => r.scope === 'user-in-path').length).toBeGreaterThanOrEqual(3);
  });

  for (const rule of restRules) {
    it(`${rule.entry} ${label(rule)}: every user caller as the table says`, async () => {
      const want: Record<string, string> = {};
      const got: Record<string, string> = {};
      for (const [name, c] of Object.entries(callers)) {
        const kind = rule.scope === 'org-in-path' ? c.inOrg : outsideKind(rule, c);
        if (rule.allow === 'anyone') want[name] = 'passes';
        else if (c.invalid) want[name] = '401 unauthorized';
        else if (kind === 'none') want[name] = '404 not_found';
        else want[name] = allows(rule, kind, c.apiKey) ? (REFINED[label(rule)]?.[kind] ?? 'passes') : '403 forbidden';
        got[name] = outcome(await call(h, rule, pathFor(rule, orgA.id, kind, deviceId), await c.token()));
      }
      expect(got).toEqual(want);
    });
  }

  it("another user's routes: 404 for a user, allowed for a server admin where the table says admin", async () => {
    const victim = await createUserForTest(h.server.db);
    const got: Record<string, string> = {};
    const want: Record<string, string> = {};
    for (const rule of restRules.filter((r) => r.scope === 'user-in-path')) {
      const url = rule.route.replace(':user', victim.id).replace(':id', randomUUID());
      for (const name of ['owner session', 'key narrower than the membership (owner, key read)', 'server admin session']) {
        const c = callers[name];
        if (!c) throw new Error(name);
        got[`${name} ${label(rule)}`] = outcome(await call(h, rule, url, await c.token()));
        const admitted = c.outside === 'admin' ? (allows(rule, 'admin') ? 'passes' : '403 forbidden') : '404 not_found';
        want[`${name} ${label(rule)}`] = admitted;
      }
    }
    expect(got).toEqual(want);
  });

  it('a session or an API key never opens an agent tunnel (the upgrade, without one, is 400 for them)', async () => {
    for (const name of ['owner session', 'server admin session', 'key broader than the membership (admin, key owner)']) {
      const c = callers[name];
      if (!c) throw new Error(name);
      const res = await h.call('GET', ROUTES.agentTunnel, { token: await c.token() });
      expect(res.statusCode, name).toBe(400);
    }
  });
});
