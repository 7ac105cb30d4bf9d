import type { Principal as TokenPrincipal } from '../store/index.js';

/**
 * Who makes a call, once its credential is resolved: the admin token, an
 * organization token, a device token or a registration key (bearer secrets
 * the store knows), or another replica of this server (a private token on
 * the private listener, bound to one device and one agent method).
 */
export type Principal = TokenPrincipal | ReplicaPrincipal;

/** Another replica forwarding one agent call: what its private token grants. */
export interface ReplicaPrincipal {
  type: 'replica';
  deviceId: string;
  method: string;
  /** How long the forwarding replica waits for the answer. */
  deadlineMs: number;
}

/**
 * The kinds of principal the rule table names (docs/protocol.md "Authentication
 * and scope"). A user (a session or a personal API key) is, per call, one of
 * them (access/user-kind.ts): `admin` for a server admin's session; in an
 * organization's routes `org-owner`, `org-admin` or `org-read` by its
 * membership there; elsewhere `user` (a session) or `api-key`.
 */
export const PRINCIPAL_KINDS = ['admin', 'org-owner', 'org-admin', 'org-read', 'device', 'registration', 'user', 'api-key', 'replica'] as const;
export type PrincipalKind = (typeof PRINCIPAL_KINDS)[number];

/** The kind of a principal outside any organization's routes (for users: see user-kind.ts). */
export function kindOf(p: Principal): PrincipalKind {
  switch (p.type) {
    case 'org':
      return p.role === 'admin' ? 'org-admin' : 'org-read';
    case 'user':
      if (p.credential === 'session') return p.serverAdmin ? 'admin' : 'user';
      return 'api-key';
    default:
      return p.type;
  }
}

/** The organization a token is confined to; undefined for the admin token, users (by membership) and replicas. */
export function orgOf(p: Principal): string | undefined {
  return p.type === 'admin' || p.type === 'replica' || p.type === 'user' ? undefined : p.orgId;
}

/** The token whose revocation ends what this principal opened (streams, tunnels). */
export function revocableTokenOf(p: Principal): string | undefined {
  return p.type === 'org' || p.type === 'device' || p.type === 'user' ? p.tokenId : undefined;
}
