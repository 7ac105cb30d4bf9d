import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { ROUTES } from '../../protocol/index.js';
import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors.js';
import type { Principal as TokenPrincipal, Store } from '../store/index.js';
import { bearerSecret } from './bearer.js';
import { decide, requiredRule, type Target } from './decide.js';
import { RevocationFollower } from './revocation-follower.js';
import type { AccessRule } from './rules.js';

export interface AccessOptions {
  store: Store;
  /** The bootstrap admin token's hash. */
  adminHash: string;
  db: Queryable;
  /** How often revocations (made on any replica) are looked up. */
  revocationCheckMs: number;
  logger: Logger;
}

/** Who opened a tunnel: a device, with one of its tokens. */
export interface TunnelPrincipal {
  deviceId: string;
  orgId: string;
  tokenId: string;
}

const TUNNEL_RULE = requiredRule('tunnel', 'GET', ROUTES.agentTunnel);

/**
 * The server's one access module: resolves who makes a call at every entry
 * point with a bearer token (REST routes, watch streams, the agent tunnel),
 * decides by the rule table (rules.ts) what it may do, and follows token
 * revocations for everything opened with a token (`revocations`).
 * The private listener's tokens are resolved by `authorizePrivate`.
 */
export class Access {
  /** The one follower of token revocations: streams and tunnels subscribe to it. */
  readonly revocations: RevocationFollower;
  readonly #store: Store;
  readonly #adminHash: string;
  readonly #principals = new WeakMap<FastifyRequest, Promise<TokenPrincipal>>();

  constructor(o: AccessOptions) {
    this.#store = o.store;
    this.#adminHash = o.adminHash;
    this.revocations = new RevocationFollower(o.db, o.store.tokens, o.revocationCheckMs, o.logger);
  }

  /** Resolves the bearer token of `headers`; 401 when it is missing, unknown, expired or revoked. */
  async #resolve(headers: IncomingHttpHeaders): Promise<TokenPrincipal> {
    const secret = bearerSecret(headers);
    if (!secret) throw new ApiError('unauthorized', 'missing bearer token');
    const principal = await this.#store.authenticate(secret, this.#adminHash);
    if (!principal) throw new ApiError('unauthorized', 'unknown, expired or revoked token');
    return principal;
  }

  /** The principal of a REST request, resolved once per request (the route's guard already did). */
  principalOf(req: FastifyRequest): Promise<TokenPrincipal> {
    let principal = this.#principals.get(req);
    if (principal === undefined) {
      principal = this.#resolve(req.headers);
      this.#principals.set(req, principal);
    }
    return principal;
  }

  /** Authorizes a REST request under its route's rule; throws the 401, 403 or 404 it gets. */
  async authorizeRequest(req: FastifyRequest, rule: AccessRule): Promise<void> {
    decide(rule, await this.principalOf(req), targetOf(req));
  }

  /** The agent tunnel's upgrade: only a device token opens one (401 without a valid token, 403 for others). */
  async authorizeTunnel(headers: IncomingHttpHeaders): Promise<TunnelPrincipal> {
    const p = await this.#resolve(headers);
    decide(TUNNEL_RULE, p, {});
    if (p.type !== 'device') throw new Error('the tunnel rule admits only device tokens');
    return { deviceId: p.deviceId, orgId: p.orgId, tokenId: p.tokenId };
  }
}

/** What a request names in its path (as the router decoded it: not yet validated, so only ever compared). */
function targetOf(req: FastifyRequest): Target {
  const params = req.params as Partial<Record<string, string>> | undefined;
  return { org: params?.['org'], id: params?.['id'], method: params?.['method'] };
}
