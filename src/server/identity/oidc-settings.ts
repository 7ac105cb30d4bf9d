import { IdentityError } from './identity-error.js';

/** How the client authenticates at the token and device authorization endpoints (RFC 6749 §2.3.1). */
export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post';

/** A fetch implementation (the global one, or one with its own dispatcher, e.g. for a private CA). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** Where the module reports what it recovers from by itself (compatible with pino's `warn`). */
export interface IdentityLogger {
  warn(obj: object, msg: string): void;
}

/** What the server configures; everything but issuer, client and logger has a default. */
export interface OidcSettingsInput {
  /**
   * The issuer identifier: `https://…`, or `http://` on a loopback host only. Compared exactly
   * with the discovery document's and the ID tokens' `iss` (no trailing-slash normalization).
   */
  issuer: string;
  clientId: string;
  clientSecret: string;
  logger: IdentityLogger;
  /** Default `client_secret_basic`. */
  clientAuthMethod?: ClientAuthMethod;
  /** Scopes asked for; `openid` is always added. Default `openid email profile`. */
  scopes?: readonly string[];
  /** Clock skew accepted on `exp`, `nbf` and `iat`, in seconds (0–300). Default 30. */
  clockToleranceS?: number;
  /** JWS algorithms an ID token may be signed with. Default RS256, PS256, ES256, EdDSA. */
  algorithms?: readonly string[];
  /** How long a discovery document is used before it is read again, in ms (1 s – 24 h). Default 1 h. */
  discoveryTtlMs?: number;
  /**
   * How long past its TTL a discovery document is still used while the issuer can't be reached,
   * in ms (0 – 7 days). Default 24 h.
   */
  discoveryMaxStaleMs?: number;
  /** Retry backoff after a failed read (exponential, jittered): first ceiling, in ms. Default 1 s. */
  retryBaseMs?: number;
  /** Retry backoff: largest ceiling, in ms. Default 5 min. */
  retryCapMs?: number;
  /** jose `cacheMaxAge`: how long fetched signing keys are trusted, in ms. Default 10 min. */
  jwksCacheMaxAgeMs?: number;
  /** jose `cooldownDuration`: least time between two JWKS fetches for an unknown `kid`, in ms. Default 30 s. */
  jwksCooldownMs?: number;
  /** Timeout of every request to the issuer, in ms. Default 10 s. */
  httpTimeoutMs?: number;
  /** Largest age of a pending browser login at its callback, in ms. Default 10 min. */
  pendingLoginTtlMs?: number;
  /** Default the global fetch. */
  fetch?: FetchLike;
  /** The clock, in ms since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** The settings with every default filled in and every range checked. */
export type OidcSettings = Readonly<Required<OidcSettingsInput>>;

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** True for `https:` URLs, and for `http:` ones on a loopback host (tests, local providers). */
export function isAcceptableIssuerUrl(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.username || url.password || url.hash) return false;
  return url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname));
}

function inRange(name: string, value: number, min: number, max: number): number {
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new IdentityError('invalid_settings', `OIDC setting ${name} must be between ${min} and ${max}, got ${value}`);
  }
  return value;
}

/** Fills in the defaults and checks every value; throws IdentityError `invalid_settings`. */
export function makeOidcSettings(input: OidcSettingsInput): OidcSettings {
  if (!isAcceptableIssuerUrl(input.issuer)) {
    throw new IdentityError('invalid_settings', `OIDC issuer must be an https URL (http only on loopback) without credentials or fragment: ${JSON.stringify(input.issuer)}`);
  }
  if (!input.clientId) throw new IdentityError('invalid_settings', 'OIDC client id is empty');
  if (!input.clientSecret) throw new IdentityError('invalid_settings', 'OIDC client secret is empty');
  const algorithms = input.algorithms ?? ['RS256', 'PS256', 'ES256', 'EdDSA'];
  if (algorithms.length === 0 || algorithms.some((alg) => alg === 'none' || alg.startsWith('HS'))) {
    // HS* would verify with the client secret, which the ID token path does not support.
    throw new IdentityError('invalid_settings', `OIDC algorithms must be non-empty asymmetric JWS algorithms, got ${algorithms.join(', ')}`);
  }
  const scopes = ['openid', ...(input.scopes ?? ['email', 'profile']).filter((s) => s !== 'openid')];
  if (scopes.some((s) => !/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s))) {
    throw new IdentityError('invalid_settings', `OIDC scopes contain an invalid scope token: ${scopes.join(' ')}`);
  }
  const retryBaseMs = inRange('retryBaseMs', input.retryBaseMs ?? 1_000, 1, 60_000);
  return {
    issuer: input.issuer,
    clientId: input.clientId,
    clientSecret: input.clientSecret,
    logger: input.logger,
    clientAuthMethod: input.clientAuthMethod ?? 'client_secret_basic',
    scopes,
    clockToleranceS: inRange('clockToleranceS', input.clockToleranceS ?? 30, 0, 300),
    algorithms: [...algorithms],
    discoveryTtlMs: inRange('discoveryTtlMs', input.discoveryTtlMs ?? 3_600_000, 1_000, 86_400_000),
    discoveryMaxStaleMs: inRange('discoveryMaxStaleMs', input.discoveryMaxStaleMs ?? 86_400_000, 0, 7 * 86_400_000),
    retryBaseMs,
    retryCapMs: inRange('retryCapMs', input.retryCapMs ?? 300_000, retryBaseMs, 3_600_000),
    jwksCacheMaxAgeMs: inRange('jwksCacheMaxAgeMs', input.jwksCacheMaxAgeMs ?? 600_000, 1_000, 86_400_000),
    jwksCooldownMs: inRange('jwksCooldownMs', input.jwksCooldownMs ?? 30_000, 0, 3_600_000),
    httpTimeoutMs: inRange('httpTimeoutMs', input.httpTimeoutMs ?? 10_000, 100, 120_000),
    pendingLoginTtlMs: inRange('pendingLoginTtlMs', input.pendingLoginTtlMs ?? 600_000, 1_000, 3_600_000),
    fetch: input.fetch ?? ((url, init) => fetch(url, init)),
    now: input.now ?? Date.now,
  };
}
