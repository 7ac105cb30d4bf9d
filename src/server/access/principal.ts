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

/** The kinds of principal the rule table names (docs/protocol.md "Authentication and scope"). */
export const PRINCIPAL_KINDS = ['admin', 'org-admin', 'org-read', 'device', 'registration', 'replica'] as const;
export type PrincipalKind = (typeof PRINCIPAL_KINDS)[number];

export function kindOf(p: Principal): PrincipalKind {
  switch (p.type) {
    case 'org':
      return p.role === 'admin' ? 'org-admin' : 'org-read';
    default:
      return p.type;
  }
}

/** The organization a principal is confined to; undefined for the admin token and replicas. */
export function orgOf(p: Principal): string | undefined {
  return p.type === 'admin' || p.type === 'replica' ? undefined : p.orgId;
}

/** The token whose revocation ends what this principal opened (streams, tunnels). */
export function revocableTokenOf(p: Principal): string | undefined {
  return p.type === 'org' || p.type === 'device' ? p.tokenId : undefined;
}
