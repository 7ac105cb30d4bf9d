/** Organization tokens and registration keys: roles, makers, cascades, secret prefixes; their schemas are in schemas/credentials.ts. */

export const TOKEN_ROLES = ['admin', 'read'] as const;
export type TokenRole = (typeof TOKEN_ROLES)[number];

/**
 * What made an organization token or a registration key, and so what it may
 * not outlive (docs/protocol.md "Authentication and scope"): the admin token
 * (nothing: it is never revoked), an organization token, a user's session or
 * personal API key (before keys were refused), or a user an owner re-parented
 * it to (no credential: it lasts while that user is a member).
 */
export const MAKER_KINDS = ['admin', 'token', 'session', 'api_key', 'user'] as const;
export type MakerKind = (typeof MAKER_KINDS)[number];

/**
 * Why a credential was revoked along with another one (the audit entry's
 * `details.cause.kind`): the revocation of the organization token, session or
 * API key that made it (or made its maker), or a change of the member whose
 * authority it rested on (removed, or demoted to `read`).
 */
export const CASCADE_CAUSES = ['token', 'session', 'api_key', 'member'] as const;
export type CascadeCause = (typeof CASCADE_CAUSES)[number];

/** Prefixes make a leaked secret recognisable in logs and secret scanners. */
export const SECRET_PREFIX = {
  admin: 'fpa_',
  orgToken: 'fpt_',
  deviceToken: 'fpd_',
  registrationKey: 'fpr_',
  /** A user's personal API key. */
  apiKey: 'fpk_',
  /** A user's session (a browser login's cookie, `ctl login`). */
  session: 'fps_',
  /** An invitation claimed by its secret (an organization's first owner). */
  invitation: 'fpi_',
} as const;
