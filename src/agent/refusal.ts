/**
 * Which fatal error a refusal by the server means: the device's token
 * refused (or expired before it was renewed), the device deleted, or its
 * organization gone.
 */
import { AuthError, NotFoundError } from '../client/index.js';
import { AgentFatalError, errorMessage } from './errors.js';

/**
 * The fatal error for `err`, a refusal the agent can't retry past.
 * `expiredAt`: when the device token expired, if it has (an AuthError then
 * means `token_expired`). An AgentFatalError is returned as it is; anything
 * else that is not a refusal is `internal`.
 */
export function refusalError(err: unknown, expiredAt: number | undefined): AgentFatalError {
  if (err instanceof AgentFatalError) return err;
  if (err instanceof AuthError && expiredAt !== undefined) return expiredError(expiredAt, err);
  if (err instanceof AuthError) {
    return new AgentFatalError(
      'token_refused',
      `the server refused this device's token (revoked, or the device was deleted): ${errorMessage(err)}. Enroll again with an empty --state-dir.`,
      { cause: err },
    );
  }
  if (err instanceof NotFoundError) {
    return new AgentFatalError('token_refused', `the organization or this device is gone: ${errorMessage(err)}`, { cause: err });
  }
  return new AgentFatalError('internal', errorMessage(err), { cause: err });
}

/** The device was deleted from its organization (reason `device_deleted`). */
export function deletedError(deviceId: string): AgentFatalError {
  return new AgentFatalError('device_deleted', `device ${deviceId} was deleted from its organization; its token is revoked. Enroll again with an empty --state-dir.`);
}

/** The token was refused after its expiry passed (reason `token_expired`). */
export function expiredError(expiredAt: number, cause: unknown): AgentFatalError {
  return new AgentFatalError(
    'token_expired',
    `this device's token expired at ${new Date(expiredAt).toISOString()} before it could be renewed (was the agent stopped, or the server unreachable, until then?): ${errorMessage(cause)}. The device must enroll again: start with an empty --state-dir and a registration key.`,
    { cause },
  );
}
