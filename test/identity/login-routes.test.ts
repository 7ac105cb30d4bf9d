/**
 * The login routes against a real OpenID provider process and a listening
 * server: the browser login with a real HTTP client following redirects, the
 * device login with a scripted approval, sessions, bootstrap admins, CSRF.
 */
import { describe, expect, it } from 'vitest';
import { COOKIES, HEADERS, paths, type CreatedSession, type DeviceLogin, type SessionInfo, type SessionList } from '../../src/protocol/index.js';
import { Browser } from './support/browser.js';
import { ACCOUNTS } from './support/fixtures.js';
import { CAROL, useLoginServer } from './support/login-server.js';
import { approveDevice, loginInBrowser } from './support/scripted-user.js';

const env = useLoginServer();

interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

async function call(method: string, path: string, opts: { token?: string; cookie?: string; origin?: string; body?: unknown } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (opts.token) headers[HEADERS.authorization] = `Bearer ${opts.token}`;
  if (opts.cookie) headers[HEADERS.cookie] = `${COOKIES.session}=${opts.cookie}`;
  if (opts.origin) headers[HEADERS.origin] = opts.origin;
  if (opts.body !== undefined) headers[HEADERS.contentType] = 'application/json';
  const res = await fetch(`${env.get().origin}${path}`, { method, headers, redirect: 'manual', ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>), headers: res.headers };
}

const code = (a: Answer): unknown => (a.body['error'] as { code?: string } | undefined)?.code;

/** Signs `username` in through the browser login; returns the browser (holding the cookie) and the session token. */
async function browserLogin(username: string, returnTo = '/dashboard'): Promise<{ browser: Browser; token: string }> {
  const { origin } = env.get();
  const browser = new Browser((url) => url.origin === origin && url.pathname === returnTo);
  const landed = await loginInBrowser(browser, `${origin}${paths.authOidcLogin()}?return_to=${encodeURIComponent(returnTo)}`, username);
  expect(landed.pathname).toBe(returnTo);
  const token = browser.cookieValue(`${origin}/`, COOKIES.session);
  if (!token) throw new Error('no session cookie after the login');
  return { browser, token };
}

/** Starts a device login and approves it as `username`; returns the poll's final answer. */
async function deviceLogin(username: string, opts: { deny?: boolean } = {}): Promise<{ start: DeviceLogin; answer: Answer; polls: Answer[] }> {
  const started = await call('POST', paths.authDevice(), { body: { client: 'ctl' } });
  expect(started.status).toBe(200);
  const start = started.body as unknown as DeviceLogin;
  const polls: Answer[] = [];
  polls.push(await call('POST', paths.authDeviceToken(), { body: { device_login: start.device_login } }));
  await approveDevice(new Browser(), start.verification_uri, start.user_code, username, opts);
  let interval = start.interval;
  for (let i = 0; i < 20; i += 1) {
    await new Promise((r) => setTimeout(r, interval * 1000));
    const answer = await call('POST', paths.authDeviceToken(), { body: { device_login: start.device_login } });
    polls.push(answer);
    if (code(answer) === 'slow_down') interval += 5;
    else if (code(answer) !== 'authorization_pending') return { start, answer, polls };
  }
  throw new Error('the device login did not finish');
}

describe('browser login (authorization code with PKCE) through the server', () => {
  it('signs a bootstrap admin in: 302 to the issuer, callback, 303 to return_to with an HttpOnly session cookie', async () => {
    const { origin, provider } = env.get();
    const first = await fetch(`${origin}${paths.authOidcLogin()}?return_to=/x`, { redirect: 'manual' });
    expect(first.status).toBe(302);
    expect(first.headers.get('location')).toMatch(new RegExp(`^${provider.issuer}/`));
    const loginCookie = first.headers.getSetCookie().find((c) => c.startsWith(`${COOKIES.login}=`));
    expect(loginCookie).toMatch(/HttpOnly/);
    expect(loginCookie).toMatch(/SameSite=Lax/);
    // Plain http on loopback: no Secure, or the browser would drop it.
    expect(loginCookie).not.toMatch(/Secure/);

    const { browser, token } = await browserLogin('alice');
    expect(token.startsWith('fps_')).toBe(true);
    const page = await browser.get(`${origin}${paths.authSession()}`);
    expect(page.status).toBe(200);
    const info = JSON.parse(page.body) as SessionInfo;
    expect(info.user).toMatchObject({ subject: ACCOUNTS.alice.sub, email: ACCOUNTS.alice.email, server_admin: true, issuer: provider.issuer });
    expect(info.session).toMatchObject({ description: 'browser', user_id: info.user.id, user_agent: 'fleetplane-test-browser' });
    // The finished login was used once and is gone: only the one started by hand above still waits.
    expect(await env.get().server.db.query('SELECT 1 FROM pending_logins WHERE kind = $1', ['browser'])).toHaveLength(1);
    // A server admin's session acts as the admin token.
    expect((await call('GET', paths.replicas(), { token })).status).toBe(200);
    // The sign-in is in the audit log, the user its actor, with the browser's address and user agent.
    const audited = await env.get().server.db.query<Record<string, unknown>>(
      `SELECT action, kind, actor_type, actor_id, credential_id, source, user_agent FROM audit_log WHERE object_id = $1`,
      [info.session.id],
    );
    expect(audited).toEqual([
      { action: 'create', kind: 'session', actor_type: 'user', actor_id: info.user.id, credential_id: info.session.id, source: '127.0.0.1', user_agent: 'fleetplane-test-browser' },
    ]);
  });

  it('refuses a return_to on another origin (no open redirect)', async () => {
    for (const bad of ['//evil.test/x', 'https://evil.test/', '/\\evil.test']) {
      const res = await call('GET', `${paths.authOidcLogin()}?return_to=${encodeURIComponent(bad)}`);
      expect(res.status, bad).toBe(400);
    }
  });

  it('refuses a callback without the login cookie, or with a state of another login', async () => {
    const noCookie = await call('GET', `${paths.authOidcCallback()}?code=x&state=y`);
    expect(noCookie.status).toBe(401);
    expect(noCookie.body['error']).toMatchObject({ code: 'login_failed', details: { reason: 'login_expired' } });
    const { origin } = env.get();
    const browser = new Browser((url) => url.origin === origin && url.pathname === paths.authOidcCallback());
    const callback = await loginInBrowser(browser, `${origin}${paths.authOidcLogin()}`, 'alice');
    callback.searchParams.set('state', 'not-the-state');
    const page = await browser.get(callback.toString());
    expect(page.status).toBe(401);
    expect(JSON.parse(page.body)).toMatchObject({ error: { code: 'login_failed', details: { reason: 'state_mismatch' } } });
  });

  it('refuses a disallowed email (403 sign_in_refused) and an unverified one', async () => {
    const { origin } = env.get();
    for (const [user, reason] of [
      ['mallory', 'email_not_allowed'],
      ['bob', 'email_not_verified'],
    ] as const) {
      const browser = new Browser((url) => url.origin === origin && url.pathname === paths.authOidcCallback());
      const callback = await loginInBrowser(browser, `${origin}${paths.authOidcLogin()}`, user);
      const page = await browser.get(callback.toString());
      expect(page.status, user).toBe(403);
      expect(JSON.parse(page.body), user).toMatchObject({ error: { code: 'sign_in_refused', details: { reason } } });
    }
    const users = await env.get().server.db.query<{ subject: string }>('SELECT subject FROM users');
    expect(users.map((u) => u.subject)).not.toContain(ACCOUNTS.mallory.sub);
  });

  it('a user not named by --oidc-admins is no server admin: 404 on organizations, 403 elsewhere', async () => {
    const { token } = await browserLogin(CAROL.username);
    const me = await call('GET', paths.authSession(), { token });
    expect(me.body['user']).toMatchObject({ server_admin: false, email: CAROL.email });
    const org = await call('POST', paths.organizations(), { token: env.get().admin, body: { name: `o-${Date.now()}` } });
    expect((await call('GET', paths.organization(String(org.body['id'])), { token })).status).toBe(404);
    expect((await call('GET', paths.replicas(), { token })).status).toBe(403);
  });

  it('CSRF: a cookie-authenticated write needs the server\'s Origin; a bearer one does not', async () => {
    const { token } = await browserLogin(CAROL.username);
    const { origin } = env.get();
    expect((await call('POST', paths.authSessionRefresh(), { cookie: token })).status).toBe(403);
    expect((await call('POST', paths.authSessionRefresh(), { cookie: token, origin: 'https://evil.test' })).status).toBe(403);
    expect((await call('POST', paths.authSessionRefresh(), { cookie: token, origin })).status).toBe(200);
    expect((await call('POST', paths.authSessionRefresh(), { token })).status).toBe(200);
    // Reads by cookie need no Origin.
    expect((await call('GET', paths.authSession(), { cookie: token })).status).toBe(200);
  });
});

describe('device login (RFC 8628) through the server', () => {
  it('answers authorization_pending, slow_down to a poll sooner than the interval, then the session once approved', async () => {
    const { provider } = env.get();
    await provider.setKnobs({ deviceIntervalS: 1, slowDownPolls: 0 });
    const since = Date.now();
    const started = await call('POST', paths.authDevice(), { body: { client: 'ctl' } });
    const start = started.body as unknown as DeviceLogin;
    expect(start).toMatchObject({ interval: 1, user_code: expect.stringMatching(/^[A-Z]{4}-[A-Z]{4}$/) as unknown });
    expect(JSON.stringify(start)).not.toContain('device_code');
    const first = await call('POST', paths.authDeviceToken(), { body: { device_login: start.device_login } });
    expect(code(first)).toBe('authorization_pending');
    const tooSoon = await call('POST', paths.authDeviceToken(), { body: { device_login: start.device_login } });
    expect(code(tooSoon)).toBe('slow_down');
    // The poll sooner than the interval never reached the issuer.
    expect((await provider.stats()).tokenRequests.filter((r) => r.at >= since)).toHaveLength(1);

    await approveDevice(new Browser(), start.verification_uri, start.user_code, CAROL.username);
    await new Promise((r) => setTimeout(r, 6_000));
    const done = await call('POST', paths.authDeviceToken(), { body: { device_login: start.device_login } });
    expect(done.status).toBe(200);
    const created = done.body as unknown as CreatedSession;
    expect(created.token.startsWith('fps_')).toBe(true);
    expect(created.session.description).toBe('ctl');
    expect(created.user.subject).toBe(CAROL.sub);
    // Used once.
    expect(code(await call('POST', paths.authDeviceToken(), { body: { device_login: start.device_login } }))).toBe('expired_token');
  }, 60_000);

  it('answers access_denied when the user refuses, and sign_in_refused for a disallowed email', async () => {
    await env.get().provider.setKnobs({ deviceIntervalS: 1, slowDownPolls: 0 });
    const denied = await deviceLogin(CAROL.username, { deny: true });
    expect(denied.answer.status).toBe(403);
    expect(code(denied.answer)).toBe('access_denied');
    const refused = await deviceLogin('mallory');
    expect(refused.answer.status).toBe(403);
    expect(refused.answer.body['error']).toMatchObject({ code: 'sign_in_refused', details: { reason: 'email_not_allowed' } });
  }, 60_000);
});

describe('sessions', () => {
  it('lists, refreshes, logs out; another user\'s sessions are 404; a server admin sees them', async () => {
    const carol = await browserLogin(CAROL.username);
    const alice = await browserLogin('alice');
    const mine = await call('GET', paths.userSessions('me'), { token: carol.token });
    expect(mine.status).toBe(200);
    const items = (mine.body as unknown as SessionList).items;
    expect(items.length).toBeGreaterThan(0);
    const carolId = items[0]?.user_id ?? '';
    const aliceInfo = (await call('GET', paths.authSession(), { token: alice.token })).body as unknown as SessionInfo;
    expect((await call('GET', paths.userSessions(aliceInfo.user.id), { token: carol.token })).status).toBe(404);
    expect((await call('GET', paths.userSessions(carolId), { token: alice.token })).status).toBe(200);

    const before = (await call('GET', paths.authSession(), { token: carol.token })).body as unknown as SessionInfo;
    const refreshed = await call('POST', paths.authSessionRefresh(), { token: carol.token });
    expect(Date.parse(String(refreshed.body['expires_at']))).toBeGreaterThanOrEqual(Date.parse(before.session.expires_at));

    const out = await call('POST', paths.authLogout(), { token: carol.token });
    expect(out.status).toBe(204);
    const revoked = await env.get().server.db.query<Record<string, unknown>>(
      `SELECT action, actor_type, credential_id FROM audit_log WHERE kind = 'session' AND object_id = $1 ORDER BY at`,
      [before.session.id],
    );
    expect(revoked.map((r) => r['action'])).toEqual(['create', 'renew', 'revoke']);
    expect(revoked.at(-1)).toMatchObject({ actor_type: 'user', credential_id: before.session.id });
    expect(out.headers.getSetCookie().some((c) => c.startsWith(`${COOKIES.session}=;`) && /Max-Age=0/.test(c))).toBe(true);
    expect((await call('GET', paths.authSession(), { token: carol.token })).status).toBe(401);
  });

  it('the admin token has no session of its own', async () => {
    expect((await call('GET', paths.authSession(), { token: env.get().admin })).status).toBe(403);
    expect((await call('GET', paths.userSessions('me'), { token: env.get().admin })).status).toBe(404);
  });
});
