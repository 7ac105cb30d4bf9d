/** The audit log's closed vocabularies and limits (docs/protocol.md "Audit log"); its schemas are in schemas/audit.ts. */

/**
 * What an audit entry records (docs/protocol.md "Audit log"): a closed set.
 * `approve`: a device's requested routes approved; `revoke`: a credential
 * ended; `renew`: a device token renewed; `denied`: a write route refused
 * with 401 or 403.
 */
export const AUDIT_ACTIONS = ['create', 'update', 'delete', 'approve', 'revoke', 'renew', 'denied'] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** What kind of object an entry is about; `route` for `denied` entries (the object id is the route). */
export const AUDIT_KINDS = [
  'organization',
  'device',
  'security_group',
  'token',
  'registration_key',
  'device_token',
  'member',
  'invitation',
  'api_key',
  'session',
  'user',
  'route',
] as const;
export type AuditKind = (typeof AUDIT_KINDS)[number];

/**
 * Who made a change: the admin token, an organization token, a device (by
 * its token), a registration key (an enrollment), a user's session, a
 * user's personal API key, another replica, or the server itself (the
 * ephemeral collector); `anonymous` for a refused attempt whose credential
 * did not resolve.
 */
export const AUDIT_ACTOR_TYPES = ['admin', 'token', 'device', 'registration_key', 'user', 'api_key', 'replica', 'system', 'anonymous'] as const;
export type AuditActorType = (typeof AUDIT_ACTOR_TYPES)[number];

/** Longest user agent kept; a longer one is cut. */
export const AUDIT_USER_AGENT_MAX = 256;
/** Largest `limit` of one audit page. */
export const AUDIT_PAGE_MAX = 500;
export const AUDIT_PAGE_DEFAULT = 100;
