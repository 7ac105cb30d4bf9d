import { errors, jwtVerify, type JWTPayload } from 'jose';
import { constantTimeEqual } from './constant-time.js';
import { IdentityError, type IdTokenProblem } from './identity-error.js';
import type { OidcIssuer } from './oidc-issuer.js';

/** The claims of a verified ID token: the registered ones checked, the others as the issuer sent them. */
export interface IdTokenClaims extends JWTPayload {
  readonly iss: string;
  readonly sub: string;
  readonly aud: string | string[];
  readonly exp: number;
  readonly iat: number;
  /** Present when the token carries a string nonce. */
  readonly nonce?: string;
}

export interface IdTokenExpectations {
  /**
   * The nonce the authorization request sent: the token must carry exactly this one. Undefined
   * where no nonce was sent (the device flow); then any nonce the token carries is ignored.
   */
  nonce: string | undefined;
}

function refused(problem: IdTokenProblem, message: string, cause?: unknown): IdentityError {
  return new IdentityError('id_token_invalid', `ID token refused: ${message}`, { problem, cause });
}

/** jose's failure, as the problem fleetplane reports. */
function joseProblem(err: unknown): IdTokenProblem {
  if (err instanceof errors.JWTExpired) return 'expired';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.reason === 'missing') return 'missing_claim';
    if (err.claim === 'iss') return 'issuer';
    if (err.claim === 'aud') return 'audience';
    if (err.claim === 'nbf' || err.claim === 'iat') return 'not_yet_valid';
    return 'malformed';
  }
  if (err instanceof errors.JOSEAlgNotAllowed || err instanceof errors.JOSENotSupported) return 'algorithm';
  if (err instanceof errors.JWSSignatureVerificationFailed || err instanceof errors.JWKSMultipleMatchingKeys) return 'signature';
  if (err instanceof errors.JWKSNoMatchingKey) return 'unknown_key';
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid) return 'malformed';
  // JWKSTimeout, JWKSInvalid, a non-200 JWKS answer, a network error: the keys, not the token.
  return 'jwks_unavailable';
}

/**
 * Verifies an ID token (OpenID Connect Core 1.0 §3.1.3.7) with jose: the signature with the
 * issuer's current keys and one of the configured algorithms; `iss` equal to the issuer; `aud`
 * containing the client id (and `azp` equal to it when present or when `aud` has several
 * values); `exp`, `nbf` and `iat` against the clock with the configured tolerance; `sub`, `iat`
 * and `exp` present; the nonce. Throws IdentityError `id_token_invalid` with the `problem`, or
 * `discovery_failed` when the issuer's metadata is unavailable.
 */
export async function verifyIdToken(issuer: OidcIssuer, token: string, expected: IdTokenExpectations): Promise<IdTokenClaims> {
  const settings = issuer.settings;
  const keys = await issuer.keys();
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, keys, {
      issuer: settings.issuer,
      audience: settings.clientId,
      algorithms: [...settings.algorithms],
      clockTolerance: settings.clockToleranceS,
      currentDate: new Date(settings.now()),
      requiredClaims: ['sub', 'iat', 'exp'],
    }));
  } catch (err) {
    const problem = joseProblem(err);
    throw refused(problem, `${problem.replace(/_/g, ' ')} (${err instanceof Error ? err.message : String(err)})`, err);
  }
  const { sub, iat, exp, aud, azp, nonce } = payload;
  if (typeof sub !== 'string' || sub === '') throw refused('missing_claim', 'sub is not a non-empty string');
  if (typeof iat !== 'number' || typeof exp !== 'number' || aud === undefined) throw refused('missing_claim', 'iat, exp or aud is missing');
  if (iat > settings.now() / 1000 + settings.clockToleranceS) throw refused('not_yet_valid', 'iat is in the future');
  if ((Array.isArray(aud) && aud.length > 1) || azp !== undefined) {
    if (azp !== settings.clientId) throw refused('authorized_party', `azp ${JSON.stringify(azp)} is not this client`);
  }
  if (expected.nonce !== undefined) {
    if (typeof nonce !== 'string' || !constantTimeEqual(nonce, expected.nonce)) throw refused('nonce', 'nonce does not match the one this login sent');
  }
  const { nonce: _nonce, ...rest } = payload;
  return { ...rest, iss: settings.issuer, sub, aud, iat, exp, ...(typeof nonce === 'string' ? { nonce } : {}) };
}
