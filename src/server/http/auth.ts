import type { FastifyRequest } from 'fastify';
import type { Principal, Store } from '../store/index.js';
import { ApiError } from '../errors.js';
import { parseBearer } from '../../protocol/index.js';

/** What a route needs inside an organization. */
export type Access = 'read' | 'write';

export function bearerOf(req: FastifyRequest): string | undefined {
  return parseBearer(req.headers.authorization);
}

/** Resolves the request's bearer token; 401 when it is missing or unknown. */
export async function authenticate(req: FastifyRequest, store: Store, adminHash: string): Promise<Principal> {
  const secret = bearerOf(req);
  if (!secret) throw new ApiError('unauthorized', 'missing bearer token');
  const principal = await store.authenticate(secret, adminHash);
  if (!principal) throw new ApiError('unauthorized', 'unknown, expired or revoked token');
  return principal;
}

/**
 * Checks that `p` may act on organization `orgId` (docs/protocol.md
 * "Authentication and scope"). Another organization's resources are 404, as
 * if they did not exist; a token of the organization without the right is 403.
 */
export function requireOrgAccess(p: Principal, orgId: string, access: Access): void {
  if (p.type === 'admin') return;
  if (p.orgId !== orgId) throw new ApiError('not_found', 'organization not found');
  if (p.type === 'registration') throw new ApiError('forbidden', 'a registration key may only enroll a device');
  if (access === 'read') return;
  if (p.type === 'org' && p.role === 'admin') return;
  throw new ApiError('forbidden', p.type === 'device' ? 'a device token may not do this' : 'a read token may not write');
}

export function requireAdmin(p: Principal): void {
  if (p.type !== 'admin') throw new ApiError('forbidden', 'only the admin token may do this');
}
