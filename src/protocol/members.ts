/** Members and roles (docs/protocol.md "Members and roles"); their schemas are in schemas/members.ts. */

/**
 * A user's role in an organization (docs/protocol.md "Members and roles"),
 * weakest first: `read` does what a read token does, `admin` what an admin
 * organization token does plus managing `admin` and `read` members, `owner`
 * everything in the organization, owners and its deletion included.
 */
export const MEMBER_ROLES = ['read', 'admin', 'owner'] as const;
export type MemberRole = (typeof MEMBER_ROLES)[number];

/** `:user` in a path: the caller's own user. */
export const USER_SELF = 'me';

/** Open invitations one organization may have at most; past it, creating one is 409 `conflict`. */
export const MAX_OPEN_INVITATIONS = 500;
/** An invitation's lifetime when the request names none: 7 days. */
export const DEFAULT_INVITATION_TTL_SECONDS = 7 * 24 * 3600;
/** The longest an invitation may stay open: 30 days. */
export const MAX_INVITATION_TTL_SECONDS = 30 * 24 * 3600;

/** `created_by` of an invitation the admin token made (others: `user:<id>`, `token:<id>`). */
export const INVITED_BY_ADMIN = 'admin';

/**
 * `details.reason` of the `revoke` entry of an owner invitation claimed by
 * token that the admin token made while the organization had no owner,
 * ended when its first owner joined another way (docs/protocol.md
 * "Members and roles").
 */
export const OWNER_JOINED = 'owner_joined';

/** Whether `a` is at least as strong a role as `b`. */
export function roleAtLeast(a: MemberRole, b: MemberRole): boolean {
  return MEMBER_ROLES.indexOf(a) >= MEMBER_ROLES.indexOf(b);
}

/** The weaker of two roles (an API key's role within its user's membership). */
export function weakerRole(a: MemberRole, b: MemberRole): MemberRole {
  return roleAtLeast(a, b) ? b : a;
}
