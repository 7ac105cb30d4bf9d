import { Type, type Static } from '@sinclair/typebox';
import { AUDIT_REDACTED, AUDIT_VALUE_MAX_BYTES } from '../audit-changes.js';
import { OrNull, Revision, Timestamp, Uuid, strict } from './common.js';
import { AUDIT_ACTIONS, AUDIT_ACTOR_TYPES, AUDIT_KINDS, AUDIT_PAGE_MAX, AUDIT_USER_AGENT_MAX } from '../audit.js';

export const AuditActor = Type.Object(
  {
    type: Type.Union(AUDIT_ACTOR_TYPES.map((t) => Type.Literal(t))),
    id: OrNull(Type.String(), { description: 'The device, user, token or key id; null for the admin token and the server.' }),
    credential_id: OrNull(Type.String(), { description: 'The token, session or key the change was made with.' }),
  },
  { ...strict, $id: 'AuditActor' },
);

export const AuditEntry = Type.Object(
  {
    id: Type.String({ description: 'Increasing with the order entries were written in (as a decimal string).' }),
    organization_id: OrNull(Uuid, { description: 'Null for entries outside any organization.' }),
    at: Timestamp,
    actor: AuditActor,
    action: Type.Union(AUDIT_ACTIONS.map((a) => Type.Literal(a))),
    kind: Type.Union(AUDIT_KINDS.map((k) => Type.Literal(k))),
    object_id: OrNull(Type.String()),
    object_name: OrNull(Type.String(), {
      description:
        "The object's name when the entry was written (an organization's or security group's name, a device's hostname, also for its device tokens, a token's, registration key's, API key's or session's description, a member's or user's email or else name, an invitation's email or else subject), so it reads after the object is gone; null when it has none, and in entries written before v1.18.",
    }),
    revision: OrNull(Revision, { description: "The organization revision of the change; null for changes that take none (credentials, denials)." }),
    source: OrNull(Type.String(), { description: 'The caller address as the server saw it.' }),
    user_agent: OrNull(Type.String({ maxLength: AUDIT_USER_AGENT_MAX })),
    details: Type.Record(Type.String(), Type.Unknown(), {
      description:
        `Small, never secrets: e.g. the refused route and status. An update or approve has \`fields\` (the changed top-level field names) and \`changes\` ({field: {from, to}}), credential-like values as "${AUDIT_REDACTED}" and a value whose JSON exceeds ${AUDIT_VALUE_MAX_BYTES} bytes as {"truncated": true, "bytes": n}.`,
    }),
  },
  { ...strict, $id: 'AuditEntry' },
);

export const AuditList = Type.Object(
  {
    items: Type.Array(AuditEntry),
    next: Type.Optional(Type.String({ description: 'Cursor for the next page (`after`); absent on the last page.' })),
  },
  { $id: 'AuditList' },
);

const Filters = {
  since: Type.Optional(Timestamp),
  until: Type.Optional(Timestamp),
  gt_revision: Type.Optional(Revision),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: AUDIT_PAGE_MAX })),
  after: Type.Optional(Type.String({ maxLength: 64, description: 'A `next` cursor from the previous page.' })),
  actor: Type.Optional(Type.String({ maxLength: 200, pattern: '^[a-z_]+(:.+)?$', description: '`type` or `type:id`.' })),
  object: Type.Optional(Type.String({ maxLength: 200 })),
  action: Type.Optional(Type.Union(AUDIT_ACTIONS.map((a) => Type.Literal(a)))),
  kind: Type.Optional(Type.Union(AUDIT_KINDS.map((k) => Type.Literal(k)))),
};

/** `GET /api/organizations/{org}/audit`: newest first unless `gt_revision` (ascending by revision). */
export const AuditQuery = Type.Object(Filters, strict);
/** `GET /api/audit` (admin token): every organization's and the server's entries; `organization` narrows. */
export const ServerAuditQuery = Type.Object({ ...Filters, organization: Type.Optional(Uuid) }, strict);

export type AuditActor = Static<typeof AuditActor>;
export type AuditEntry = Static<typeof AuditEntry>;
export type AuditList = Static<typeof AuditList>;
export type AuditQuery = Static<typeof AuditQuery>;
export type ServerAuditQuery = Static<typeof ServerAuditQuery>;
