import { SignJWT, jwtVerify, type JWTPayload } from 'jose';
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

/** A short-lived HS256 token of audience PRIVATE_JWT_AUDIENCE from `issuer` about `subject`, with `claims`. */
function signPrivate(key: Uint8Array, issuer: string, subject: string, claims: Record<string, unknown>, lifetimeS: number): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(issuer)
    .setSubject(subject)
    .setAudience(PRIVATE_JWT_AUDIENCE)
    .setIssuedAt(now)
    .setExpirationTime(now + lifetimeS)
    .sign(key);
}

/**
 * The payload of a private token: HS256 with the shared key, audience
 * PRIVATE_JWT_AUDIENCE, not expired, `required` claims present, and a
 * lifetime of at most PRIVATE_JWT_MAX_LIFETIME_S. Throws PrivateTokenError.
 */
async function verifyPrivate(key: Uint8Array, token: string, required: readonly string[]): Promise<JWTPayload> {
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, key, {
      algorithms: ['HS256'],
      audience: PRIVATE_JWT_AUDIENCE,
      clockTolerance: CLOCK_TOLERANCE_S,
      requiredClaims: ['iat', 'exp', ...required],
    }));
  } catch (err) {
    throw new PrivateTokenError(`invalid private token: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const { iat, exp } = payload;
  if (iat === undefined || exp === undefined || exp - iat > PRIVATE_JWT_MAX_LIFETIME_S) {
    throw new PrivateTokenError(`private tokens may live at most ${PRIVATE_JWT_MAX_LIFETIME_S} s`);
  }
  return payload;
}

/** Signs a short-lived HS256 token for one forwarded request. */
export function signPrivateToken(key: Uint8Array, issuer: string, grant: PrivateGrant, lifetimeS = PRIVATE_TOKEN_LIFETIME_S): Promise<string> {
  const claims = { [PRIVATE_JWT_CLAIMS.method]: grant.method, [PRIVATE_JWT_CLAIMS.deadlineMs]: grant.deadlineMs };
  return signPrivate(key, issuer, grant.deviceId, claims, lifetimeS);
}

/**
 * Verifies a token for a request to `deviceId`/`method` (see verifyPrivate),
 * bound to this device and method. Returns the answer deadline it carries;
 * throws PrivateTokenError.
 */
export async function verifyPrivateToken(key: Uint8Array, token: string, deviceId: string, method: string): Promise<number> {
  const payload = await verifyPrivate(key, token, ['sub']);
  if (payload.sub !== deviceId || payload[PRIVATE_JWT_CLAIMS.method] !== method) {
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
  return signPrivate(key, issuer, receiver, {}, lifetimeS);
}

/**
 * Verifies a relay link's token for the replica `receiver` (see
 * verifyPrivate): `sub` the receiver, no `method`, and another replica as
 * issuer. Returns the issuer (the dialing replica); throws PrivateTokenError.
 */
export async function verifyRelayLinkToken(key: Uint8Array, token: string, receiver: string): Promise<string> {
  const payload = await verifyPrivate(key, token, ['sub', 'iss']);
  if (payload.sub !== receiver || payload[PRIVATE_JWT_CLAIMS.method] !== undefined) throw new PrivateTokenError('the private token was not issued for a relay link to this replica');
  const { iss } = payload;
  if (typeof iss !== 'string' || iss === '' || iss === receiver) throw new PrivateTokenError('the private token names no other replica as its issuer');
  return iss;
}
