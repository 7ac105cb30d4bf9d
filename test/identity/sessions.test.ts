/**
 * Sessions as credentials, without an identity provider (users signed in
 * through the store, as the login routes do): revocation ends a real watch
 * stream, refresh on another replica is seen past the cached expiry, the
 * absolute end, bootstrap admins, the per-user bound, the bounded pending logins.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PENDING_LOGINS_PER_SOURCE, MAX_SESSIONS_PER_USER, paths, WATCH_KINDS, type CreatedSession } from '../../src/protocol/index.js';
import type { BootstrapAdmins, LoginIdentity, SessionTerms } from '../../src/server/store/index.js';
import { startServer, type FleetServer } from '../../src/server/index.js';
import { runAudited, SYSTEM_SCOPE } from '../../src/server/audit/index.js';
import { Harness, uniqueName } from '../server/fixtures.js';
import { openWatch } from '../watch/support/watch-client.js';
import { startWatchServer, type WatchServer } from '../watch/support/watch-server.js';

const ADMINS: BootstrapAdmins = { emails: ['root@example.com'], subjects: ['sub-root'] };
const TERMS: SessionTerms = { ttlSeconds: 3600, maxAgeSeconds: 7200, source: '127.0.0.1', userAgent: 'test', description: 'ctl' };

function person(subject: string, email?: string, emailVerified = true): LoginIdentity {
  return { issuer: 'https://issuer.test', subject, email, emailVerified, name: undefined };
}

function signIn(server: FleetServer, identity: LoginIdentity, admins = ADMINS, terms = TERMS): Promise<CreatedSession> {
  // As a login route does: in an audit scope (here the server's own).
  return runAudited(SYSTEM_SCOPE, () => server.ctx.store.logins.signIn(identity, admins, terms));
}

describe('sessions as credentials', () => {
  let ws: WatchServer;
  let h: Harness;
  beforeAll(async () => {
    ws = await startWatchServer('pglite', { revocationCheckInterval: 0.1 });
    h = ws.h;
  });
  afterAll(async () => {
    await ws.close();
  });

  it('revoking a session ends its watch stream with forbidden; the session is 401 after', async () => {
    const org = await h.createOrg();
    const { token, session } = await signIn(ws.server, person('sub-root'));
    const stream = await openWatch(ws.target(org.id, token), WATCH_KINDS.map((kind) => ({ kind })));
    await stream.waitFor((e) => e.type === 'tail', 5_000);
    const del = await h.call('DELETE', paths.userSession('me', session.id), { token });
    expect(del.statusCode).toBe(204);
    const rest = await stream.rest(10_000);
    expect(rest.at(-1)).toMatchObject({ type: 'error', value: { code: 'forbidden' } });
    expect((await h.call('GET', paths.organization(org.id), { token })).statusCode).toBe(401);
  });

  it('bootstrap admins: subject or verified email at first login; the flag never changes an existing user', async () => {
    const store = ws.server.ctx.store.logins;
    expect((await signIn(ws.server, person('sub-root'))).user.server_admin).toBe(true);
    expect((await signIn(ws.server, person(`s-${uniqueName()}`, 'Root@Example.com'))).user.server_admin).toBe(true);
    expect((await signIn(ws.server, person(`s-${uniqueName()}`, 'root@example.com', false))).user.server_admin).toBe(false);
    // Later logins without the flag keep it; a user added to the flag later does not get it.
    expect((await signIn(ws.server, person('sub-root'), { emails: [], subjects: [] })).user.server_admin).toBe(true);
    const plain = await signIn(ws.server, person('sub-plain', 'plain@example.com'));
    expect(plain.user.server_admin).toBe(false);
    const again = await signIn(ws.server, person('sub-plain', 'plain2@example.com'), { emails: [], subjects: ['sub-plain'] });
    expect(again.user).toMatchObject({ server_admin: false, email: 'plain2@example.com', id: plain.user.id });
    expect(await store.getUser(plain.user.id)).toMatchObject({ email: 'plain2@example.com' });
  });

  it('a user keeps at most MAX_SESSIONS_PER_USER live sessions: the oldest are revoked', async () => {
    const who = person(`s-${uniqueName()}`);
    const first = await signIn(ws.server, who);
    for (let i = 0; i < MAX_SESSIONS_PER_USER; i += 1) await signIn(ws.server, who);
    expect(await ws.server.ctx.store.logins.listSessions(first.user.id)).toHaveLength(MAX_SESSIONS_PER_USER);
    expect((await h.call('GET', paths.authSession(), { token: first.token })).statusCode).toBe(401);
  });

  it('refresh extends the idle end, never past max_expires_at', async () => {
    const { token, session } = await signIn(ws.server, person(`s-${uniqueName()}`), ADMINS, { ...TERMS, ttlSeconds: 60, maxAgeSeconds: 120 });
    expect(Date.parse(session.max_expires_at) - Date.parse(session.created_at)).toBe(120_000);
    await ws.server.db.query(`UPDATE tokens SET max_expires_at = now() + interval '5 seconds' WHERE id = $1`, [session.id]);
    const res = await h.call('POST', paths.authSessionRefresh(), { token });
    expect(res.statusCode).toBe(200);
    const refreshed = res.json<{ expires_at: string; max_expires_at: string }>();
    expect(refreshed.expires_at).toBe(refreshed.max_expires_at);
  });

  it('an expired session is 401', async () => {
    const { token, session } = await signIn(ws.server, person(`s-${uniqueName()}`));
    expect((await h.call('GET', paths.authSession(), { token })).statusCode).toBe(200);
    await ws.server.db.query(`UPDATE tokens SET expires_at = now() - interval '1 second' WHERE id = $1`, [session.id]);
    // The token index still has the old expiry: only the database knows, and the follower drops it.
    ws.server.ctx.store.tokens.revoke([session.id]);
    expect((await h.call('GET', paths.authSession(), { token })).statusCode).toBe(401);
  });

  it('without --oidc-issuer the login routes are 404 not_found, saying login is not configured', async () => {
    for (const [method, url, body] of [
      ['GET', paths.authOidcLogin(), undefined],
      ['GET', paths.authOidcCallback(), undefined],
      ['POST', paths.authDevice(), {}],
      ['POST', paths.authDeviceToken(), { device_login: 'x' }],
    ] as const) {
      const res = await h.call(method, url, body === undefined ? {} : { body });
      expect([res.statusCode, res.json<{ error: { code: string; message: string } }>().error], url).toEqual([404, { code: 'not_found', message: expect.stringContaining('not configured') as unknown }]);
    }
  });

  it('pending logins are bounded per source: 429 with Retry-After past it', async () => {
    const logins = ws.server.ctx.store.logins;
    const data = { state: 's', nonce: 'n', codeVerifier: 'v', redirectUri: 'http://x/cb', returnTo: '/', createdAt: Date.now() };
    for (let i = 0; i < MAX_PENDING_LOGINS_PER_SOURCE; i += 1) await logins.createPendingLogin('browser', '192.0.2.7', data, 600);
    const err = await logins.createPendingLogin('browser', '192.0.2.7', data, 600).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'too_many_requests' });
    expect((err as { retryAfterHeader(): string | undefined }).retryAfterHeader()).toBeDefined();
    // Another source is not affected; expired ones no longer count.
    await logins.createPendingLogin('browser', '192.0.2.8', data, 600);
    await ws.server.db.query(`UPDATE pending_logins SET expires_at = now() - interval '1 second' WHERE source = '192.0.2.7'`);
    await logins.createPendingLogin('browser', '192.0.2.7', data, 600);
  });
});

describe('a session refreshed on another replica', () => {
  it('is looked up again once its cached expiry passed, not refused', async () => {
    const a = await startServer({ memory: true, logLevel: 'silent' }, { listen: false });
    try {
      const { token, session } = await signIn(a, person(`s-${uniqueName()}`));
      const h = new Harness(a);
      expect((await h.call('GET', paths.userSessions('me'), { token })).statusCode).toBe(200);
      // The index holds this expiry; "another replica" refreshes in the database only. (The sessions list, unlike
      // GET /api/auth/session, does not read the caller's own session again: only authentication decides here.)
      a.ctx.store.tokens.extend(session.id, Date.now() - 1);
      await a.db.query(`UPDATE tokens SET expires_at = now() + interval '1 hour' WHERE id = $1`, [session.id]);
      expect((await h.call('GET', paths.userSessions('me'), { token })).statusCode).toBe(200);
      // And one truly expired in the database is refused.
      a.ctx.store.tokens.extend(session.id, Date.now() - 1);
      await a.db.query(`UPDATE tokens SET expires_at = now() - interval '1 second' WHERE id = $1`, [session.id]);
      expect((await h.call('GET', paths.userSessions('me'), { token })).statusCode).toBe(401);
    } finally {
      await a.close();
    }
  });
});
