import { FORMATS, USER_SELF, weakerRole, type MemberRole } from '../../protocol/index.js';
import { notFound } from '../errors.js';
import type { ApiKeyPrincipal, Principal, SessionPrincipal } from '../principal/index.js';
import { kindOf, type PrincipalKind } from './principal-kind.js';
import type { AccessRule } from './rules.js';
import type { Target } from './decide.js';

/** A user's role in an organization now; undefined when not a member (or the organization is gone). */
export type MembershipLookup = (orgId: string, userId: string) => Promise<MemberRole | undefined>;

const ROLE_KIND: Readonly<Record<MemberRole, PrincipalKind>> = { owner: 'org-owner', admin: 'org-admin', read: 'org-read' };

/**
 * The kind a principal is for one call under `rule` (the kind the rule's row
 * is read with). Tokens have one kind everywhere (kindOf). A user's depends on
 * the call:
 * - a server admin's session is `admin`, as the admin token, except on the
 *   rules made for sessions (those naming `user` and not `admin`, e.g. its
 *   own session) and on its own user's routes, where it is `user`;
 * - in an organization's routes (`org-in-path`), the user's role there now
 *   (one indexed query, `memberships`), and for an API key at most its own
 *   role, only in its organizations; not a member: 404, as another
 *   organization's token gets;
 * - in a user's routes (`user-in-path`), `user` (a session) or `api-key` on
 *   the caller's own (`me` or its id); another user's: 404;
 * - elsewhere `user` or `api-key`.
 * Membership is read on every call, never cached: a removed member (or one
 * whose role went down) loses access with the next request, on every replica.
 */
export async function effectiveKind(rule: AccessRule, p: Principal, target: Target, roleOf: MembershipLookup): Promise<PrincipalKind> {
  if (p.type !== 'user') return kindOf(p);
  const serverAdmin = p.credential === 'session' && p.serverAdmin;
  if (rule.scope === 'org-in-path') return serverAdmin ? 'admin' : orgKind(p, target.org, roleOf);
  if (rule.scope === 'user-in-path') {
    if (target.user === USER_SELF || target.user === p.userId) return p.credential === 'session' ? 'user' : 'api-key';
    if (serverAdmin) return 'admin';
    throw notFound('user');
  }
  if (serverAdmin) return forSessionsOnly(rule) ? 'user' : 'admin';
  return kindOf(p);
}

/** A rule that admits user sessions but not the admin token: a server admin's session is let in there as a user. */
function forSessionsOnly(rule: AccessRule): boolean {
  return rule.allow !== 'anyone' && rule.allow.admin === undefined && rule.allow.user !== undefined;
}

async function orgKind(p: SessionPrincipal | ApiKeyPrincipal, org: string | undefined, roleOf: MembershipLookup): Promise<PrincipalKind> {
  // The path is not validated yet: a malformed id is no organization, and must not reach SQL as a uuid.
  if (org === undefined || !FORMATS.uuid(org)) throw notFound('organization');
  if (p.credential === 'api_key' && !p.keyOrgIds.includes(org)) throw notFound('organization');
  const role = await roleOf(org, p.userId);
  if (role === undefined) throw notFound('organization');
  return ROLE_KIND[p.credential === 'api_key' ? weakerRole(role, p.keyRole) : role];
}
