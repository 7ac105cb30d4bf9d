import type { IncomingHttpHeaders } from 'node:http';
import { ROUTES } from '../../protocol/index.js';
import { ApiError } from '../errors.js';
import { bearerSecret } from './bearer.js';
import { decide, requiredRule } from './decide.js';
import type { RelayLinkPrincipal, ReplicaPrincipal } from '../principal/index.js';
import { PrivateTokenError, verifyPrivateToken, verifyRelayLinkToken } from './private-token.js';

const RULE = requiredRule('private', 'POST', ROUTES.privateAgentRpc);
const RELAY_LINK_RULE = requiredRule('private', 'GET', ROUTES.privateRelay);

/**
 * The private listener's entry point: resolves the forwarding replica from
 * its private token, which must be valid under `key` and issued for this
 * device and method. Throws 401 (`unauthorized`) otherwise.
 */
export async function authorizePrivate(headers: IncomingHttpHeaders, key: Uint8Array, target: { deviceId: string; method: string }): Promise<ReplicaPrincipal> {
  const token = bearerSecret(headers);
  if (!token) throw new ApiError('unauthorized', 'missing private token');
  let deadlineMs: number;
  try {
    deadlineMs = await verifyPrivateToken(key, token, target.deviceId, target.method);
  } catch (err) {
    if (err instanceof PrivateTokenError) throw new ApiError('unauthorized', err.message, undefined, { cause: err });
    throw err;
  }
  const principal: ReplicaPrincipal = { type: 'replica', deviceId: target.deviceId, method: target.method, deadlineMs };
  decide(RULE, principal, { id: target.deviceId, method: target.method });
  return principal;
}

/**
 * A relay link's upgrade on the private listener: resolves the dialing
 * replica from its private token, which must be valid under `key` and issued
 * for a link to `receiver` (this replica). Throws 401 (`unauthorized`) otherwise.
 */
export async function authorizeRelayLink(headers: IncomingHttpHeaders, key: Uint8Array, receiver: string): Promise<RelayLinkPrincipal> {
  const token = bearerSecret(headers);
  if (!token) throw new ApiError('unauthorized', 'missing private token');
  let replicaId: string;
  try {
    replicaId = await verifyRelayLinkToken(key, token, receiver);
  } catch (err) {
    if (err instanceof PrivateTokenError) throw new ApiError('unauthorized', err.message, undefined, { cause: err });
    throw err;
  }
  const principal: RelayLinkPrincipal = { type: 'replica', link: 'relay', replicaId };
  decide(RELAY_LINK_RULE, principal, {});
  return principal;
}
