import type { SignInRefusal } from './sign-in-policy.js';

/**
 * What went wrong, one code per failure kind:
 * - `invalid_settings`: the OIDC settings are unusable (message names the setting).
 * - `discovery_failed`: the issuer's discovery document could not be read, or is invalid
 *   (including an `issuer` that differs from the configured one).
 * - `unsupported`: the issuer lacks something fleetplane needs (S256 PKCE, the device
 *   authorization endpoint, the configured client authentication method).
 * - `http_failed`: an endpoint of the issuer could not be reached, timed out, or answered
 *   something that is not a JSON object within the size limit; `status` carries the HTTP status
 *   when there was one. Transient.
 * - `oauth_error`: the issuer answered an OAuth error; `oauthError` carries its `error` code
 *   (e.g. `invalid_grant`).
 * - `authorization_failed`: the browser came back with an error (`oauthError`), without a code,
 *   or with an `iss` parameter naming another issuer.
 * - `state_mismatch`: the callback's `state` is not the one this login sent.
 * - `login_expired`: the pending browser login is older than the settings allow.
 * - `id_token_invalid`: the ID token was refused; `problem` says why.
 * - `userinfo_invalid`: the UserInfo answer is unusable or names another subject.
 * - `access_denied`: device flow: the user refused the request.
 * - `expired_token`: device flow: the device code expired before the user approved it.
 * - `aborted`: the caller's AbortSignal fired; `cause` is its reason.
 * - `sign_in_refused`: the identity is valid but the sign-in policy refuses it; `refusal` says why.
 */
export type IdentityErrorCode =
  | 'invalid_settings'
  | 'discovery_failed'
  | 'unsupported'
  | 'http_failed'
  | 'oauth_error'
  | 'authorization_failed'
  | 'state_mismatch'
  | 'login_expired'
  | 'id_token_invalid'
  | 'userinfo_invalid'
  | 'access_denied'
  | 'expired_token'
  | 'aborted'
  | 'sign_in_refused';

/**
 * Why an ID token was refused. `jwks_unavailable` and `unknown_key` are about the issuer's keys
 * (the JWKS could not be fetched, or holds no key for the token's `kid` even after a refetch);
 * the others are about the token itself.
 */
export type IdTokenProblem =
  | 'malformed'
  | 'algorithm'
  | 'signature'
  | 'unknown_key'
  | 'jwks_unavailable'
  | 'issuer'
  | 'audience'
  | 'authorized_party'
  | 'expired'
  | 'not_yet_valid'
  | 'missing_claim'
  | 'nonce';

export interface IdentityErrorOptions {
  cause?: unknown;
  /** The OAuth `error` code, with `oauth_error`, `authorization_failed`, `access_denied` and `expired_token`. */
  oauthError?: string;
  /** With `id_token_invalid`. */
  problem?: IdTokenProblem;
  /** With `sign_in_refused`. */
  refusal?: SignInRefusal;
  /** The HTTP status of the answer, when there was one. */
  status?: number;
}

/** Every failure of the identity module. `code` is stable; `message` is for people. */
export class IdentityError extends Error {
  override readonly name = 'IdentityError';
  readonly oauthError: string | undefined;
  readonly problem: IdTokenProblem | undefined;
  readonly refusal: SignInRefusal | undefined;
  readonly status: number | undefined;

  constructor(
    readonly code: IdentityErrorCode,
    message: string,
    options: IdentityErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.oauthError = options.oauthError;
    this.problem = options.problem;
    this.refusal = options.refusal;
    this.status = options.status;
  }

  /** True for failures worth retrying later (the issuer unreachable or overloaded). */
  get transient(): boolean {
    if (this.code === 'http_failed' || this.code === 'discovery_failed') return true;
    return this.code === 'oauth_error' && (this.oauthError === 'server_error' || this.oauthError === 'temporarily_unavailable');
  }
}

/** The IdentityError for an aborted signal, or undefined when it has not fired. */
export function abortedError(signal: AbortSignal | undefined): IdentityError | undefined {
  if (!signal?.aborted) return undefined;
  return new IdentityError('aborted', 'the operation was aborted', { cause: signal.reason });
}
