import { constantTimeEqual } from './constant-time.js';
import { IdentityError } from './identity-error.js';
import { identityFromTokens, type OidcLoginResult } from './login-result.js';
import type { OidcIssuer } from './oidc-issuer.js';
import { randomToken, s256Challenge } from './pkce.js';
import { requestTokens } from './token-endpoint.js';

/**
 * What the server keeps between sending a browser to the issuer and the browser's callback. It
 * holds the PKCE verifier, a secret: keep it server-side (or sealed), bound to the browser that
 * started the login, and use it once.
 */
export interface PendingAuthorization {
  readonly state: string;
  readonly nonce: string;
  readonly codeVerifier: string;
  readonly redirectUri: string;
  /** When the login started, in ms since the epoch. */
  readonly createdAt: number;
}

export interface AuthorizationOptions {
  /** The callback URL, exactly as registered at the issuer. */
  redirectUri: string;
  /** OpenID `prompt` (e.g. `login`, `select_account`). */
  prompt?: string;
  /** OpenID `login_hint` (e.g. an invitee's email). */
  loginHint?: string;
}

export interface AuthorizationStart {
  /** Where to send the browser (302). */
  readonly url: string;
  readonly pending: PendingAuthorization;
}

/**
 * Starts a browser login: the authorization code flow with PKCE S256, a fresh `state` and
 * `nonce`. Throws IdentityError `unsupported` when the issuer says it lacks S256, and
 * `discovery_failed`.
 */
export async function startAuthorization(issuer: OidcIssuer, options: AuthorizationOptions): Promise<AuthorizationStart> {
  const { settings } = issuer;
  const metadata = await issuer.metadata();
  const methods = metadata.code_challenge_methods_supported;
  if (methods !== undefined && !methods.includes('S256')) {
    throw new IdentityError('unsupported', `the issuer does not support PKCE S256 (it lists ${methods.join(', ') || 'nothing'})`);
  }
  const pending: PendingAuthorization = {
    state: randomToken(),
    nonce: randomToken(),
    codeVerifier: randomToken(),
    redirectUri: options.redirectUri,
    createdAt: settings.now(),
  };
  const url = new URL(metadata.authorization_endpoint);
  const params = url.searchParams;
  params.set('response_type', 'code');
  params.set('client_id', settings.clientId);
  params.set('redirect_uri', pending.redirectUri);
  params.set('scope', settings.scopes.join(' '));
  params.set('state', pending.state);
  params.set('nonce', pending.nonce);
  params.set('code_challenge', s256Challenge(pending.codeVerifier));
  params.set('code_challenge_method', 'S256');
  if (options.prompt !== undefined) params.set('prompt', options.prompt);
  if (options.loginHint !== undefined) params.set('login_hint', options.loginHint);
  return { url: url.toString(), pending };
}

/**
 * Finishes a browser login from its callback (the full callback URL, or its query parameters):
 * checks the pending login's age, `state`, the `iss` parameter (RFC 9207), an `error`; exchanges
 * the code with the PKCE verifier; verifies the ID token, nonce included. Throws IdentityError
 * `login_expired`, `state_mismatch`, `authorization_failed`, `oauth_error` (e.g. `invalid_grant`
 * for a used or expired code), `id_token_invalid`, `userinfo_invalid`, `http_failed`, `aborted`.
 */
export async function completeAuthorization(
  issuer: OidcIssuer,
  callback: URL | URLSearchParams,
  pending: PendingAuthorization,
  signal?: AbortSignal,
): Promise<OidcLoginResult> {
  const { settings } = issuer;
  const params = callback instanceof URL ? callback.searchParams : callback;
  if (settings.now() - pending.createdAt > settings.pendingLoginTtlMs) {
    throw new IdentityError('login_expired', 'the login took too long; start again');
  }
  const state = params.get('state');
  if (state === null || !constantTimeEqual(state, pending.state)) {
    throw new IdentityError('state_mismatch', 'the callback does not belong to this login (state mismatch)');
  }
  const metadata = await issuer.metadata();
  const iss = params.get('iss');
  if (iss !== null ? iss !== settings.issuer : metadata.authorization_response_iss_parameter_supported) {
    throw new IdentityError('authorization_failed', `the callback's iss ${JSON.stringify(iss)} is not the configured issuer`);
  }
  const error = params.get('error');
  if (error !== null) {
    const description = params.get('error_description');
    throw new IdentityError('authorization_failed', `the issuer refused the login: ${error}${description ? ` (${description})` : ''}`, { oauthError: error });
  }
  const code = params.get('code');
  if (code === null || code === '') throw new IdentityError('authorization_failed', 'the callback carries no code');
  const tokens = await requestTokens(
    settings,
    metadata,
    { grant_type: 'authorization_code', code, redirect_uri: pending.redirectUri, code_verifier: pending.codeVerifier },
    signal,
  );
  return identityFromTokens(issuer, metadata, tokens, pending.nonce, signal);
}
