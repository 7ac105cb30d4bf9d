import { describe, expect, it } from 'vitest';
import { checkSignIn, IdentityError, makeOidcSettings, makeSignInPolicy, type SignInFacts } from '../../src/server/identity/index.js';

const alice: SignInFacts = { subject: 'sub-alice', email: 'alice@example.com', emailVerified: true };

describe('sign-in policy', () => {
  it('lets everyone in when nothing is listed', () => {
    expect(checkSignIn(alice, makeSignInPolicy())).toEqual({ allowed: true, matchedBy: 'anyone' });
  });

  it('matches emails and domains case-insensitively, and not subdomains', () => {
    const policy = makeSignInPolicy({ emails: [' Carol@Corp.Example '], domains: ['@Example.COM'] });
    expect(checkSignIn({ ...alice, email: 'ALICE@example.com' }, policy)).toMatchObject({ allowed: true, matchedBy: 'domain' });
    expect(checkSignIn({ ...alice, email: 'carol@corp.example' }, policy)).toMatchObject({ allowed: true, matchedBy: 'email' });
    expect(checkSignIn({ ...alice, email: 'eve@sub.example.com' }, policy)).toMatchObject({ allowed: false, reason: 'email_not_allowed' });
    expect(checkSignIn({ ...alice, email: 'eve@example.com.evil' }, policy)).toMatchObject({ allowed: false, reason: 'email_not_allowed' });
    expect(checkSignIn({ ...alice, email: 'example.com' }, policy)).toMatchObject({ allowed: false, reason: 'email_not_allowed' });
  });

  it('requires a verified email for email rules unless told otherwise', () => {
    const facts = { ...alice, emailVerified: false };
    expect(checkSignIn(facts, makeSignInPolicy({ domains: ['example.com'] }))).toMatchObject({ allowed: false, reason: 'email_not_verified' });
    expect(checkSignIn(facts, makeSignInPolicy({ domains: ['example.com'], requireVerifiedEmail: false }))).toMatchObject({ allowed: true });
  });

  it('says why: no email, subject not listed', () => {
    expect(checkSignIn({ ...alice, email: undefined }, makeSignInPolicy({ emails: ['alice@example.com'] }))).toMatchObject({ allowed: false, reason: 'email_missing' });
    expect(checkSignIn(alice, makeSignInPolicy({ subjects: ['sub-bob'] }))).toMatchObject({ allowed: false, reason: 'subject_not_allowed' });
    // A listed subject needs no email.
    expect(checkSignIn({ ...alice, email: undefined }, makeSignInPolicy({ subjects: ['sub-alice'], domains: ['x.test'] }))).toMatchObject({ allowed: true, matchedBy: 'subject' });
  });
});

describe('OIDC settings', () => {
  const base = { issuer: 'https://id.example.com', clientId: 'c', clientSecret: 's', logger: { warn: () => undefined } };

  it('fills in defaults, always asks for openid', () => {
    const s = makeOidcSettings({ ...base, scopes: ['email'] });
    expect(s.scopes).toEqual(['openid', 'email']);
    expect(s.clockToleranceS).toBe(30);
    expect(s.clientAuthMethod).toBe('client_secret_basic');
  });

  it.each([
    ['http issuer off loopback', { issuer: 'http://id.example.com' }],
    ['issuer with credentials', { issuer: 'https://u:p@id.example.com' }],
    ['empty secret', { clientSecret: '' }],
    ['symmetric algorithm', { algorithms: ['HS256'] }],
    ['unbounded discovery TTL', { discoveryTtlMs: 7 * 86_400_000 }],
    ['negative skew', { clockToleranceS: -1 }],
  ])('refuses %s', (_name, override) => {
    expect(() => makeOidcSettings({ ...base, ...override })).toThrow(IdentityError);
  });

  it('accepts http on loopback (local providers, tests)', () => {
    expect(makeOidcSettings({ ...base, issuer: 'http://127.0.0.1:5556' }).issuer).toBe('http://127.0.0.1:5556');
  });
});
