import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { HEADERS, ROUTES } from '../../protocol/index.js';
import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors.js';
import type { TokenPrincipal } from '../principal/index.js';
import type { Store } from '../store/index.js';
import { bearerSecret } from './bearer.js';
import { serverOrigin, sessionCookie, tokenCookie } from '../login/index.js';
import { decide, requiredRule, type Target } from './decide.js';
import type { PrincipalKind } from './principal-kind.js';
import { effectiveKind } from './user-kind.js';
import { RevocationFollower } from './revocation-follower.js';
import type { AccessRule } from './rules.js';

export interface AccessOptions {
  store: Store;
  /** The bootstrap admin token's hash. */
  adminHash: string;
  db: Queryable;
  /** How often revocations (made on any replica) are looked up. */
  revocationCheckMs: number;
  /** `--public-url`: the origin a cookie-authenticated write must come from (else the request's own). */
  publicUrl?: string | undefined;
  logger: Logger;
}

/** Who opened a tunnel: a device, with one of its tokens. */
export interface TunnelPrincipal {
  deviceId: string;
  orgId: string;
  tokenId: string;
}

/** The device upgrades and their rules, looked up once, at load. */
const UPGRADE_RULES = {
  [ROUTES.agentTunnel]: requiredRule('tunnel', 'GET', ROUTES.agentTunnel),
  [ROUTES.relay]: requiredRule('tunnel', 'GET', ROUTES.relay),
} as const;
/** A device's WebSocket upgrade: the agent tunnel, or a relay session. */
export type DeviceUpgradeRoute = keyof typeof UPGRADE_RULES;

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
  readonly #publicUrl: string | undefined;
  readonly #principals = new WeakMap<FastifyRequest, Promise<TokenPrincipal>>();
  readonly #kinds = new WeakMap<FastifyRequest, PrincipalKind>();

  constructor(o: AccessOptions) {
    this.#store = o.store;
    this.#adminHash = o.adminHash;
    this.#publicUrl = o.publicUrl;
    this.revocations = new RevocationFollower(o.db, o.store.tokens, o.revocationCheckMs, o.logger);
  }

  /** Resolves the bearer token of `headers`; 401 when it is missing, unknown, expired or revoked. */
  async #resolve(headers: IncomingHttpHeaders, secret = bearerSecret(headers)): Promise<TokenPrincipal> {
    if (!secret) throw new ApiError('unauthorized', 'missing bearer token');
    const principal = await this.#store.credentials.authenticate(secret, this.#adminHash);
    if (!principal) throw new ApiError('unauthorized', 'unknown, expired or revoked token');
    return principal;
  }

  /** Whether a REST request carries a credential at all (a bearer token or a dashboard cookie), valid or not. */
  presentsCredential(req: FastifyRequest): boolean {
    return bearerSecret(req.headers) !== undefined || sessionCookie(req.headers) !== undefined || tokenCookie(req.headers) !== undefined;
  }

  /** The principal of a REST request, resolved once per request (the route's guard already did). */
  principalOf(req: FastifyRequest): Promise<TokenPrincipal> {
    let principal = this.#principals.get(req);
    if (principal === undefined) {
      const bearer = bearerSecret(req.headers);
      principal = bearer !== undefined ? this.#resolve(req.headers, bearer) : this.#fromCookies(req);
      this.#principals.set(req, principal);
    }
    return principal;
  }

  /**
   * A browser's session cookie, on REST routes only (never the tunnel): a
   * bearer header wins. A cookie-authenticated request other than GET/HEAD
   * must come from this server's origin (CSRF), else 403.
   */
  async #fromCookies(req: FastifyRequest): Promise<TokenPrincipal> {
    const session = sessionCookie(req.headers);
    const token = session === undefined ? tokenCookie(req.headers) : undefined;
    if ((session !== undefined || token !== undefined) && req.method !== 'GET' && req.method !== 'HEAD') this.checkOrigin(req);
    const p = await this.#resolve(req.headers, session ?? token);
    // Only what an operator signs the dashboard in with counts in its cookie (a planted device token is no one).
    if (token !== undefined && !isOperator(p)) throw new ApiError('unauthorized', 'unknown, expired or revoked token');
    return p;
  }

  /** 403 unless the request comes from this server's origin (a browser's write: CSRF). */
  checkOrigin(req: FastifyRequest): void {
    if (req.headers[HEADERS.origin] !== serverOrigin(req, this.#publicUrl)) {
      throw new ApiError('forbidden', 'a request authenticated by a cookie must come from this server\'s origin (Origin header)');
    }
  }

  /** The principal of a token given in a request's body (the dashboard's sign-in); 401 as for a bearer token. */
  authenticate(secret: string): Promise<TokenPrincipal> {
    return this.#resolve({}, secret);
  }

  /** Authorizes a REST request under its route's rule; throws the 401, 403 or 404 it gets. */
  async authorizeRequest(req: FastifyRequest, rule: AccessRule): Promise<void> {
    const p = await this.principalOf(req);
    const target = targetOf(req);
    const kind = await effectiveKind(rule, p, target, this.#store.members.role);
    decide(rule, p, target, kind);
    this.#kinds.set(req, kind);
  }

  /**
   * The kind an authorized REST request was let in as (a user's role in the
   * path's organization, see user-kind.ts); routes refine by it (who may
   * manage owners). Throws for a request its guard did not authorize.
   */
  kindOfRequest(req: FastifyRequest): PrincipalKind {
    const kind = this.#kinds.get(req);
    if (kind === undefined) throw new Error(`${req.method} ${req.url}: no authorized kind (the route's guard did not run)`);
    return kind;
  }

  /**
   * A device's upgrade (the agent tunnel by default, or a relay session):
   * only a device token opens one (401 without a valid token, 403 for others).
   */
  async authorizeTunnel(headers: IncomingHttpHeaders, route: DeviceUpgradeRoute = ROUTES.agentTunnel): Promise<TunnelPrincipal> {
    const p = await this.#resolve(headers);
    decide(UPGRADE_RULES[route], p, {});
    if (p.type !== 'device') throw new Error('the tunnel rule admits only device tokens');
    return { deviceId: p.deviceId, orgId: p.orgId, tokenId: p.tokenId };
  }
}

/** An admin token, an organization token or a personal API key: what the dashboard's token cookie may hold. */
export function isOperator(p: TokenPrincipal): boolean {
  return p.type === 'admin' || p.type === 'org' || (p.type === 'user' && p.credential === 'api_key');
}

/** What a request names in its path (as the router decoded it: not yet validated, so only ever compared). */
function targetOf(req: FastifyRequest): Target {
  const params = req.params as Partial<Record<string, string>> | undefined;
  return { org: params?.['org'], id: params?.['id'], method: params?.['method'], user: params?.['user'] };
}
