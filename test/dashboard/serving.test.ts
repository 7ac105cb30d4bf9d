/**
 * The dashboard's bundle as the server serves it, and the sign-in with a
 * pasted token (docs/protocol.md "The dashboard"), in-process.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COOKIES, paths } from '../../src/protocol/index.js';
import { startServer } from '../../src/server/index.js';
import { errorCode, Harness } from '../server/fixtures.js';

const ORIGIN = 'http://localhost:80';

/** The cookie a Set-Cookie header sets, as a browser would send it back. */
function cookieOf(setCookie: string | string[] | undefined): string {
  const first = Array.isArray(setCookie) ? setCookie[0] : setCookie;
  return (first ?? '').split(';')[0] ?? '';
}

describe('the dashboard, served', () => {
  let dir: string;
  let h: Harness;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fp-dashboard-bundle-'));
    await writeFile(join(dir, 'index.html'), '<!doctype html><title>fleetplane</title>');
    await writeFile(join(dir, 'app-ABC123.js'), 'console.log(1)');
    h = new Harness(await startServer({ memory: true, logLevel: 'silent' }, { listen: false, dashboardDir: dir }));
  });
  afterAll(async () => {
    await h.server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves its page at / with a strict CSP, revalidated at every load, to anyone', async () => {
    const res = await h.call('GET', '/');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('<title>fleetplane</title>');
    expect(res.headers['cache-control']).toBe('no-cache');
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBe('DENY');
  });

  it('serves hashed assets for good, and nothing else from its directory', async () => {
    const js = await h.call('GET', '/ui/app-ABC123.js');
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toMatch(/javascript/);
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    for (const bad of ['/ui/index.html', '/ui/app-NOPE.js', '/ui/..%2Findex.html', '/ui/app-ABC123.js.map']) {
      const res = await h.call('GET', bad);
      expect([res.statusCode, errorCode(res)], bad).toEqual([404, 'not_found']);
    }
  });

  it('leaves the API as it was', async () => {
    expect((await h.call('GET', paths.organizations())).statusCode).toBe(401);
    expect((await h.call('GET', '/api/nothing-here')).statusCode).toBe(404);
  });

  it('answers 503 saying how to build it when the bundle is missing', async () => {
    const bare = new Harness(await startServer({ memory: true, logLevel: 'silent' }, { listen: false, dashboardDir: join(dir, 'missing') }));
    try {
      const res = await bare.call('GET', '/');
      expect([res.statusCode, errorCode(res)]).toEqual([503, 'unavailable']);
      expect(res.body).toContain('npm run build');
    } finally {
      await bare.server.close();
    }
  });
});

describe('signing the dashboard in with a token', () => {
  let h: Harness;
  beforeAll(async () => {
    h = new Harness(await startServer({ memory: true, logLevel: 'silent' }, { listen: false }));
  });
  afterAll(async () => {
    await h.server.close();
  });

  /** `origin` null: the request has no Origin header. */
  const signIn = (token: string, origin: string | null = ORIGIN) =>
    h.call('POST', paths.authTokenSession(), { body: { token }, headers: origin === null ? {} : { origin, host: 'localhost:80' } });

  it('puts an operator token in an HttpOnly, SameSite=Strict cookie that then authenticates the browser', async () => {
    const org = await h.createOrg();
    const orgToken = await h.createToken(org.id, 'admin');
    for (const token of [h.admin, orgToken]) {
      const res = await signIn(token);
      expect(res.statusCode).toBe(204);
      const set = String(res.headers['set-cookie']);
      expect(set).toMatch(new RegExp(`^${COOKIES.token}=`));
      expect(set).toContain('HttpOnly');
      expect(set).toContain('SameSite=Strict');
      // Plain http on loopback: no Secure (the browser would drop the cookie).
      expect(set).not.toContain('Secure');
      const cookie = cookieOf(res.headers['set-cookie']);
      const read = await h.call('GET', paths.organization(org.id), { headers: { cookie } });
      expect(read.statusCode).toBe(200);
    }
  });

  it('refuses device tokens and registration keys (403) and unknown tokens (401), setting no cookie', async () => {
    const org = await h.createOrg();
    const device = await h.createDevice(org.id);
    const key = (await h.createRegKey(org.id)).key;
    for (const [token, status] of [
      [device.device_token, 403],
      [key, 403],
      ['fpa_not_a_token', 401],
    ] as const) {
      const res = await signIn(token);
      expect(res.statusCode, token.slice(0, 4)).toBe(status);
      expect(res.headers['set-cookie']).toBeUndefined();
    }
    // A device token planted in the cookie by hand authenticates nothing either.
    const planted = await h.call('GET', paths.organization(org.id), { headers: { cookie: `${COOKIES.token}=${device.device_token}` } });
    expect(planted.statusCode).toBe(401);
  });

  it('needs the server\'s own Origin to sign in, and for every write the cookie authenticates (CSRF)', async () => {
    expect((await signIn(h.admin, null)).statusCode).toBe(403);
    expect((await signIn(h.admin, 'https://evil.example')).statusCode).toBe(403);
    const cookie = cookieOf((await signIn(h.admin)).headers['set-cookie']);
    const body = { name: `csrf-${process.pid}-${Date.now()}` };
    const forged = await h.call('POST', paths.organizations(), { body, headers: { cookie, origin: 'https://evil.example', host: 'localhost:80' } });
    expect([forged.statusCode, errorCode(forged)]).toEqual([403, 'forbidden']);
    const own = await h.call('POST', paths.organizations(), { body, headers: { cookie, origin: ORIGIN, host: 'localhost:80' } });
    expect(own.statusCode).toBe(201);
  });

  it('signs out by clearing the cookie; a revoked token in the cookie is 401 at once', async () => {
    expect((await h.call('DELETE', paths.authTokenSession(), { headers: { origin: 'https://evil.example', host: 'localhost:80' } })).statusCode).toBe(403);
    const out = await h.call('DELETE', paths.authTokenSession(), { headers: { origin: ORIGIN, host: 'localhost:80' } });
    expect(out.statusCode).toBe(204);
    expect(String(out.headers['set-cookie'])).toMatch(new RegExp(`^${COOKIES.token}=; Path=/; Max-Age=0;`));
    const org = await h.createOrg();
    const created = await h.ok<{ id: string; token: string }>(201, 'POST', paths.tokens(org.id), { body: { role: 'read' } });
    const cookie = cookieOf((await signIn(created.token)).headers['set-cookie']);
    expect((await h.call('GET', paths.organization(org.id), { headers: { cookie } })).statusCode).toBe(200);
    await h.ok(204, 'DELETE', paths.token(org.id, created.id));
    expect((await h.call('GET', paths.organization(org.id), { headers: { cookie } })).statusCode).toBe(401);
  });
});
