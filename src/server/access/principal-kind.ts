import type { Principal } from '../principal/index.js';

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
