import type { MemberRole, TokenRole } from '../../protocol/index.js';

/**
 * Who makes a call, once its credential is resolved: a bearer secret the
 * store knows (TokenPrincipal), or another replica of this server (a private
 * token on the private listener, bound to one device and one agent method).
 */
export type Principal = TokenPrincipal | ReplicaPrincipal | RelayLinkPrincipal;

/** Who a bearer secret belongs to: the admin token, an organization token, a device token, a registration key or a user. */
export type TokenPrincipal =
  | { type: 'admin' }
  | { type: 'org'; tokenId: string; orgId: string; role: TokenRole }
  | { type: 'device'; tokenId: string; orgId: string; deviceId: string }
  | { type: 'registration'; keyId: string; orgId: string }
  | SessionPrincipal
  | ApiKeyPrincipal;

/** A user's session (a browser's cookie or `ctl login`). */
export interface SessionPrincipal {
  type: 'user';
  credential: 'session';
  tokenId: string;
  userId: string;
  serverAdmin: boolean;
}

/**
 * A user's personal API key: acts as its user, in `keyOrgIds` only, with at
 * most `keyRole` and at most the user's current role in each (the access
 * module decides per request from `memberships`). Never a server admin.
 */
export interface ApiKeyPrincipal {
  type: 'user';
  credential: 'api_key';
  tokenId: string;
  userId: string;
  serverAdmin: false;
  keyRole: MemberRole;
  keyOrgIds: readonly string[];
}

/** Another replica forwarding one agent call: what its private token grants. */
export interface ReplicaPrincipal {
  type: 'replica';
  deviceId: string;
  method: string;
  /** How long the forwarding replica waits for the answer. */
  deadlineMs: number;
}

/** Another replica opening its relay link to this one (docs/protocol.md "Relays"): what its link token grants. */
export interface RelayLinkPrincipal {
  type: 'replica';
  link: 'relay';
  /** The dialing replica (the token's `iss`). */
  replicaId: string;
}

/** The organization a token is confined to; undefined for the admin token, users (by membership) and replicas. */
export function orgOf(p: Principal): string | undefined {
  return p.type === 'admin' || p.type === 'replica' || p.type === 'user' ? undefined : p.orgId;
}

/** The token whose revocation ends what this principal opened (streams, tunnels). */
export function revocableTokenOf(p: Principal): string | undefined {
  return p.type === 'org' || p.type === 'device' || p.type === 'user' ? p.tokenId : undefined;
}
