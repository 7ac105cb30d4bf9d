/**
 * The browser login (authorization code + PKCE) against a real OpenID provider (oidc-provider in
 * its own process), with a real HTTP client following the redirects and carrying the provider's
 * cookies, and the user's login and consent scripted at the provider's interaction pages.
 */
import { decodeProtectedHeader } from 'jose';
import { describe, expect, it } from 'vitest';
import { verifyIdToken, type OidcLogin, type PendingAuthorization, type SignedIn } from '../../src/server/identity/index.js';
import { Browser } from './support/browser.js';
import { ACCOUNTS, CLIENTS, loginFor, REDIRECT_URI, refusal, useTestProvider } from './support/fixtures.js';
import { loginInBrowser } from './support/scripted-user.js';

const provider = useTestProvider();

function newBrowser(): Browser {
  return new Browser((url) => url.toString().startsWith(REDIRECT_URI));
}

/** Starts a login, plays the user in a fresh browser, and returns the callback with its pending login. */
async function callbackFor(login: OidcLogin, username: string): Promise<{ callback: URL; pending: PendingAuthorization }> {
  const { url, pending } = await login.startBrowserLogin({ redirectUri: REDIRECT_URI });
  const callback = await loginInBrowser(newBrowser(), url, username);
  return { callback, pending };
}

async function signIn(login: OidcLogin, username: string): Promise<SignedIn> {
  const { callback, pending } = await callbackFor(login, username);
  return login.finishBrowserLogin(callback, pending);
}

describe('browser login: authorization code with PKCE', () => {
  it('signs in end to end: PKCE S256, state, nonce, the code exchanged with client_secret_basic, the ID token verified', async () => {
    const login = loginFor(provider.get());
    const { url, pending } = await login.startBrowserLogin({ redirectUri: REDIRECT_URI });
    const sent = new URL(url).searchParams;
    expect(sent.get('code_challenge_method')).toBe('S256');
    expect(sent.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(sent.get('code_challenge')).not.toBe(pending.codeVerifier);
    expect(sent.get('state')).toBe(pending.state);
    expect(sent.get('nonce')).toBe(pending.nonce);
    expect(sent.get('scope')).toBe('openid email profile');

    const browser = newBrowser();
    const callback = await loginInBrowser(browser, url, 'alice');
    expect(callback.searchParams.get('iss')).toBe(provider.get().issuer);
    expect(browser.cookieNames(`${provider.get().issuer}/auth`)).toContain('_session');

    const signedIn = await login.finishBrowserLogin(callback, pending);
    expect(signedIn.identity).toMatchObject({ issuer: provider.get().issuer, subject: ACCOUNTS.alice.sub, email: 'alice@example.com', emailVerified: true, name: 'Alice' });
    expect(signedIn.identity.claims.nonce).toBe(pending.nonce);
    // A conformant provider puts scope-requested claims in UserInfo, not the ID token, when it
    // issues an access token: the email came from UserInfo.
    expect(signedIn.identity.claims.email).toBeUndefined();
    expect(signedIn.identity.claims.aud).toBe(CLIENTS.fleetplane.client_id);
    expect(signedIn.matchedBy).toBe('anyone');
    expect(signedIn.tokens.accessToken).not.toBe('');
    expect((await provider.get().stats()).tokenRequests.at(-1)).toMatchObject({ error: null, clientAuth: 'basic' });

    // The code is single-use: a replayed callback is refused by the provider.
    const replay = await refusal(login.finishBrowserLogin(callback, pending));
    expect(replay).toMatchObject({ code: 'oauth_error', oauthError: 'invalid_grant' });
  });

  it('exchanges the code with client_secret_post for a client registered so', async () => {
    const signedIn = await signIn(loginFor(provider.get(), {}, CLIENTS.other), 'alice');
    expect(signedIn.identity.subject).toBe(ACCOUNTS.alice.sub);
    expect(signedIn.identity.claims.aud).toBe(CLIENTS.other.client_id);
    // oidc-provider accepts either method from a client_secret_* client: check what was sent.
    expect((await provider.get().stats()).tokenRequests.at(-1)).toMatchObject({ error: null, clientAuth: 'body' });
  });

  it('refuses a callback whose state is not the login’s, before spending the code', async () => {
    const login = loginFor(provider.get());
    const { callback, pending } = await callbackFor(login, 'alice');
    const err = await refusal(login.finishBrowserLogin(callback, { ...pending, state: 'another-login' }));
    expect(err.code).toBe('state_mismatch');
    // The code was not spent: the real login still completes.
    await expect(login.finishBrowserLogin(callback, pending)).resolves.toMatchObject({ identity: { subject: ACCOUNTS.alice.sub } });
  });

  it('refuses a pending login past its lifetime and a callback naming another issuer, before spending the code', async () => {
    const login = loginFor(provider.get());
    const { callback, pending } = await callbackFor(login, 'alice');
    const stale = await refusal(login.finishBrowserLogin(callback, { ...pending, createdAt: pending.createdAt - 11 * 60_000 }));
    expect(stale.code).toBe('login_expired');
    const forged = new URL(callback);
    forged.searchParams.set('iss', 'https://attacker.example');
    const mixUp = await refusal(login.finishBrowserLogin(forged, pending));
    expect(mixUp.code).toBe('authorization_failed');
    const withoutIss = new URL(callback);
    withoutIss.searchParams.delete('iss');
    // The provider says it sends iss (RFC 9207), so a callback without one is refused too.
    expect((await refusal(login.finishBrowserLogin(withoutIss, pending))).code).toBe('authorization_failed');
    await expect(login.finishBrowserLogin(callback, pending)).resolves.toMatchObject({ identity: { subject: ACCOUNTS.alice.sub } });
  });

  it('refuses an ID token whose nonce is not the login’s', async () => {
    const login = loginFor(provider.get());
    const { callback, pending } = await callbackFor(login, 'alice');
    const err = await refusal(login.finishBrowserLogin(callback, { ...pending, nonce: 'not-the-nonce-sent' }));
    expect(err).toMatchObject({ code: 'id_token_invalid', problem: 'nonce' });
  });

  it('refuses an ID token issued to another client (wrong audience)', async () => {
    const other = await signIn(loginFor(provider.get(), {}, CLIENTS.other), 'alice');
    const fleetplane = loginFor(provider.get());
    const err = await refusal(verifyIdToken(fleetplane.issuer, other.tokens.idToken, { nonce: undefined }));
    expect(err).toMatchObject({ code: 'id_token_invalid', problem: 'audience' });
  });

  it('refuses an expired ID token, and accepts it within the configured clock skew', async () => {
    await provider.get().setKnobs({ idTokenTtlS: 1 });
    try {
      const signedIn = await signIn(loginFor(provider.get()), 'alice');
      const { exp, iat } = signedIn.identity.claims;
      expect(exp - iat).toBe(1);
      await new Promise((r) => setTimeout(r, 2_100));
      const strict = loginFor(provider.get(), { clockToleranceS: 0 });
      const err = await refusal(verifyIdToken(strict.issuer, signedIn.tokens.idToken, { nonce: signedIn.identity.claims.nonce }));
      expect(err).toMatchObject({ code: 'id_token_invalid', problem: 'expired' });
      const lenient = loginFor(provider.get(), { clockToleranceS: 30 });
      await expect(verifyIdToken(lenient.issuer, signedIn.tokens.idToken, { nonce: signedIn.identity.claims.nonce })).resolves.toMatchObject({ sub: ACCOUNTS.alice.sub });
    } finally {
      await provider.get().setKnobs({ idTokenTtlS: 3600 });
    }
  });

  it('refuses an ID token signed with an algorithm outside the allowed ones', async () => {
    const login = loginFor(provider.get(), { algorithms: ['ES256'] });
    const err = await refusal(signIn(login, 'alice'));
    expect(err).toMatchObject({ code: 'id_token_invalid', problem: 'algorithm' });
  });

  it('applies the sign-in policy: allowed domain, disallowed email, unverified email, listed subject', async () => {
    const policy = { domains: ['example.com'], subjects: [ACCOUNTS.nomail.sub] };
    const login = loginFor(provider.get(), { policy });
    await expect(signIn(login, 'alice')).resolves.toMatchObject({ matchedBy: 'domain' });
    await expect(signIn(login, 'nomail')).resolves.toMatchObject({ matchedBy: 'subject' });

    const disallowed = await refusal(signIn(login, 'mallory'));
    expect(disallowed).toMatchObject({ code: 'sign_in_refused', refusal: { reason: 'email_not_allowed' } });
    expect(disallowed.message).toContain('mallory@evil.test');

    // Bob@Example.com is in the domain (case-insensitively) but the provider does not vouch for it.
    const unverified = await refusal(signIn(login, 'bob'));
    expect(unverified).toMatchObject({ code: 'sign_in_refused', refusal: { reason: 'email_not_verified' } });
  });

  it('accepts tokens signed with a rotated key: the unknown kid makes the verifier fetch the JWKS again', async () => {
    const p = provider.get();
    const login = loginFor(p, { jwksCooldownMs: 0 });
    // A verifier that fetched the keys recently and honours a long cooldown does not refetch.
    const cooled = loginFor(p, { jwksCooldownMs: 60_000 });
    const before = await signIn(login, 'alice');
    await verifyIdToken(cooled.issuer, before.tokens.idToken, { nonce: before.identity.claims.nonce });
    const oldKid = decodeProtectedHeader(before.tokens.idToken).kid;
    const fetchesBefore = (await p.stats()).jwksRequests;

    const newKid = await p.rotateKey();
    expect(newKid).not.toBe(oldKid);
    const after = await signIn(login, 'alice');
    expect(decodeProtectedHeader(after.tokens.idToken).kid).toBe(newKid);
    expect(after.identity.subject).toBe(ACCOUNTS.alice.sub);
    expect((await p.stats()).jwksRequests).toBe(fetchesBefore + 1);

    const err = await refusal(verifyIdToken(cooled.issuer, after.tokens.idToken, { nonce: after.identity.claims.nonce }));
    expect(err).toMatchObject({ code: 'id_token_invalid', problem: 'unknown_key' });
    // Tokens signed with the old key, still published, stay valid.
    await expect(verifyIdToken(login.issuer, before.tokens.idToken, { nonce: before.identity.claims.nonce })).resolves.toMatchObject({ sub: ACCOUNTS.alice.sub });
  });

  it('reports the provider’s refusal of the login (the user aborts at consent)', async () => {
    const login = loginFor(provider.get());
    const { url, pending } = await login.startBrowserLogin({ redirectUri: REDIRECT_URI });
    const browser = newBrowser();
    let page = await browser.get(url);
    page = await browser.submit(page, 'login', { username: 'alice' });
    page = await browser.submit(page, 'abort');
    expect(page.stoppedAt).toBeDefined();
    const err = await refusal(login.finishBrowserLogin(page.stoppedAt ?? new URL(REDIRECT_URI), pending));
    expect(err).toMatchObject({ code: 'authorization_failed', oauthError: 'access_denied' });
  });
});
