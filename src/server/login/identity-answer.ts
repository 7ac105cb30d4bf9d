import { IdentityError } from '../identity/index.js';
import { ApiError } from '../errors.js';

/** Seconds a client waits before trying again when the issuer can't be reached. */
const ISSUER_RETRY_AFTER_S = 5;

/**
 * The catalog answer for what the identity module threw (docs/protocol.md
 * "Users and login", errors). The issuer's `error_description` never reaches
 * the message (it may echo request input): only its OAuth `error` code, in
 * `details.oauth_error`. Anything that is not an IdentityError is thrown on.
 */
export function identityAnswer(err: unknown): ApiError {
  if (!(err instanceof IdentityError)) throw err;
  const opts = { cause: err };
  if (err.transient || err.problem === 'jwks_unavailable' || err.code === 'unsupported' || err.code === 'aborted') {
    return new ApiError('unavailable', 'the identity provider cannot be reached or used now; retry', undefined, { ...opts, retryAfterS: ISSUER_RETRY_AFTER_S });
  }
  switch (err.code) {
    case 'sign_in_refused':
      return new ApiError('sign_in_refused', err.refusal?.message ?? 'sign-in refused', { reason: err.refusal?.reason }, opts);
    case 'access_denied':
      return new ApiError('access_denied', undefined, undefined, opts);
    case 'expired_token':
      return new ApiError('expired_token', undefined, undefined, opts);
    case 'id_token_invalid':
      return new ApiError('login_failed', 'the identity provider\'s ID token was refused', { reason: 'id_token_invalid', problem: err.problem }, opts);
    case 'authorization_failed':
      return new ApiError('login_failed', 'the identity provider did not authorize the login', { reason: 'authorization_failed', ...(err.oauthError ? { oauth_error: err.oauthError } : {}) }, opts);
    case 'oauth_error':
      return new ApiError('login_failed', 'the identity provider refused the login', { reason: err.oauthError === 'invalid_grant' ? 'invalid_grant' : 'authorization_failed', oauth_error: err.oauthError }, opts);
    case 'state_mismatch':
    case 'login_expired':
    case 'userinfo_invalid':
      return new ApiError('login_failed', undefined, { reason: err.code }, opts);
    default:
      // invalid_settings is checked at start; anything else is a server fault, logged by the error handler.
      return new ApiError('internal', undefined, undefined, opts);
  }
}
