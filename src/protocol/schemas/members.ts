import { Type, type Static } from '@sinclair/typebox';
import { ListOf, OrNull, Timestamp, Uuid, strict } from './common.js';
import { MAX_INVITATION_TTL_SECONDS, MEMBER_ROLES } from '../members.js';

const Role = Type.Union(MEMBER_ROLES.map((r) => Type.Literal(r)));

export const Member = Type.Object(
  {
    user_id: Uuid,
    organization_id: Uuid,
    role: Role,
    email: OrNull(Type.String()),
    name: OrNull(Type.String()),
    created_at: Timestamp,
  },
  { $id: 'Member' },
);
export const MemberList = ListOf(Member, 'MemberList');
export const MemberPatch = Type.Object({ role: Role }, { ...strict, $id: 'MemberPatch' });
export const OrgUserParams = Type.Object({ org: Uuid, user: Uuid }, strict);

export const Invitation = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    /** At most one of email and subject is set; neither: the invitation is claimed by its token. */
    email: OrNull(Type.String()),
    subject: OrNull(Type.String()),
    role: Role,
    /** Who invited: `user:<id>`, `token:<id>` or `admin`. */
    created_by: Type.String(),
    created_at: Timestamp,
    expires_at: Timestamp,
  },
  { $id: 'Invitation' },
);
export const InvitationList = ListOf(Invitation, 'InvitationList');

/** A created invitation; one with neither email nor subject carries its `token`, shown once. */
export const CreatedInvitation = Type.Composite(
  [Invitation, Type.Object({ token: Type.Optional(Type.String({ description: 'Shown once: whoever signs in and presents it (POST /api/invitations/accept) accepts it.' })) })],
  { $id: 'CreatedInvitation' },
);

/** `POST /api/invitations/accept`: a signed-in user claims an invitation by its token. */
export const InvitationAccept = Type.Object({ token: Type.String({ minLength: 1, maxLength: 256 }) }, { ...strict, $id: 'InvitationAccept' });

/** An email as invitations match it (case-insensitively, and only against a verified email). */
export const InviteeEmail = Type.String({ pattern: '^[^@\\s]+@[^@\\s]+$', maxLength: 320, description: 'Matched case-insensitively, and only against a verified email.' });

/** At most one of `email` and `subject`; neither: an invitation claimed by its token (returned once). */
export const InvitationCreate = Type.Object(
  {
    email: Type.Optional(InviteeEmail),
    subject: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    role: Role,
    /** Seconds until it expires (default DEFAULT_INVITATION_TTL_SECONDS); or `expires_at`, not both. */
    expires_in: Type.Optional(Type.Integer({ minimum: 60, maximum: MAX_INVITATION_TTL_SECONDS })),
    expires_at: Type.Optional(Timestamp),
  },
  { ...strict, $id: 'InvitationCreate' },
);

export type Member = Static<typeof Member>;
export type MemberList = Static<typeof MemberList>;
export type MemberPatch = Static<typeof MemberPatch>;
export type Invitation = Static<typeof Invitation>;
export type InvitationList = Static<typeof InvitationList>;
export type InvitationCreate = Static<typeof InvitationCreate>;
export type CreatedInvitation = Static<typeof CreatedInvitation>;
export type InvitationAccept = Static<typeof InvitationAccept>;
