import { SignJWT, jwtVerify } from 'jose';
import { PRIVATE_JWT_AUDIENCE, PRIVATE_JWT_CLAIMS, PRIVATE_JWT_MAX_LIFETIME_S } from '../../protocol/index.js';

/** Lifetime of the tokens this replica issues (the contract allows up to PRIVATE_JWT_MAX_LIFETIME_S). */
export const PRIVATE_TOKEN_LIFETIME_S = 10;

/** Clock difference between replicas the receiving side tolerates. */
const CLOCK_TOLERANCE_S = 5;

/** What a private token authorizes: one method on one device, answered within `deadlineMs`. */
export interface PrivateGrant {
  deviceId: string;
  method: string;
  deadlineMs: number;
}

/** The private listener refused a token. */
export class PrivateTokenError extends Error {
  override readonly name = 'PrivateTokenError';
}

export function privateKey(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

/** Signs a short-lived HS256 token for one forwarded request. */
export function signPrivateToken(key: Uint8Array, issuer: string, grant: PrivateGrant, lifetimeS = PRIVATE_TOKEN_LIFETIME_S): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ [PRIVATE_JWT_CLAIMS.method]: grant.method, [PRIVATE_JWT_CLAIMS.deadlineMs]: grant.deadlineMs })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(issuer)
    .setSubject(grant.deviceId)
    .setAudience(PRIVATE_JWT_AUDIENCE)
    .setIssuedAt(now)
    .setExpirationTime(now + lifetimeS)
    .sign(key);
}

/**
 * Verifies a token for a request to `deviceId`/`method`: HS256 with the
 * shared key, audience PRIVATE_JWT_AUDIENCE, not expired, a lifetime of at
 * most PRIVATE_JWT_MAX_LIFETIME_S, and bound to this device and method.
 * Returns the answer deadline it carries; throws PrivateTokenError.
 */
export async function verifyPrivateToken(key: Uint8Array, token: string, deviceId: string, method: string): Promise<number> {
  let payload;
  try {
    ({ payload } = await jwtVerify(token, key, {
      algorithms: ['HS256'],
      audience: PRIVATE_JWT_AUDIENCE,
      clockTolerance: CLOCK_TOLERANCE_S,
      requiredClaims: ['iat', 'exp', 'sub'],
    }));
  } catch (err) {
    throw new PrivateTokenError(`invalid private token: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const { iat, exp, sub } = payload;
  if (iat === undefined || exp === undefined || exp - iat > PRIVATE_JWT_MAX_LIFETIME_S) {
    throw new PrivateTokenError(`private tokens may live at most ${PRIVATE_JWT_MAX_LIFETIME_S} s`);
  }
  if (sub !== deviceId || payload[PRIVATE_JWT_CLAIMS.method] !== method) {
    throw new PrivateTokenError('the private token was issued for another device or method');
  }
  const deadline = payload[PRIVATE_JWT_CLAIMS.deadlineMs];
  if (typeof deadline !== 'number' || !Number.isFinite(deadline) || deadline <= 0) {
    throw new PrivateTokenError('the private token carries no valid deadline');
  }
  return deadline;
}

/**
 * Signs the token a replica opens its relay link to another with
 * (docs/protocol.md "Relays"): `iss` this replica, `sub` the replica it
 * dials, and no `method`, so it is never valid for an agent call (nor an
 * agent call's token for a link).
 */
export function signRelayLinkToken(key: Uint8Array, issuer: string, receiver: string, lifetimeS = PRIVATE_TOKEN_LIFETIME_S): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(issuer)
    .setSubject(receiver)
    .setAudience(PRIVATE_JWT_AUDIENCE)
    .setIssuedAt(now)
    .setExpirationTime(now + lifetimeS)
    .sign(key);
}

/**
 * Verifies a relay link's token for the replica `receiver`: HS256 with the
 * shared key, audience PRIVATE_JWT_AUDIENCE, not expired, a lifetime of at
 * most PRIVATE_JWT_MAX_LIFETIME_S, `sub` the receiver, no `method`, and an
 * issuer. Returns the issuer (the dialing replica); throws PrivateTokenError.
 */
export async function verifyRelayLinkToken(key: Uint8Array, token: string, receiver: string): Promise<string> {
  let payload;
  try {
    ({ payload } = await jwtVerify(token, key, {
      algorithms: ['HS256'],
      audience: PRIVATE_JWT_AUDIENCE,
      clockTolerance: CLOCK_TOLERANCE_S,
      requiredClaims: ['iat', 'exp', 'sub', 'iss'],
    }));
  } catch (err) {
    throw new PrivateTokenError(`invalid private token: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const { iat, exp, sub, iss } = payload;
  if (iat === undefined || exp === undefined || exp - iat > PRIVATE_JWT_MAX_LIFETIME_S) {
    throw new PrivateTokenError(`private tokens may live at most ${PRIVATE_JWT_MAX_LIFETIME_S} s`);
  }
  if (sub !== receiver || payload[PRIVATE_JWT_CLAIMS.method] !== undefined) throw new PrivateTokenError('the private token was not issued for a relay link to this replica');
  if (typeof iss !== 'string' || iss === '' || iss === receiver) throw new PrivateTokenError('the private token names no other replica as its issuer');
  return iss;
}
