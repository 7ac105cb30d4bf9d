import { Type, type Static } from '@sinclair/typebox';
import { Cidr, Ip, OrNull, Revision, Timestamp, Uuid, strict } from './common.js';
import { CreatedInvitation, InviteeEmail } from './members.js';
import { TAG_OWNER_PATTERN, TAG_PATTERN } from '../references.js';
import { PolicySecurityGroup } from './security-group.js';

export const Route = Type.Object({ destination: Cidr, via: Type.Optional(Ip) }, { ...strict, $id: 'Route' });

/** Routes inside `cidr` that a device carrying one of `tags` requests are approved when requested. */
export const AutoApprover = Type.Object(
  { cidr: Cidr, tags: Type.Array(Type.String({ pattern: TAG_PATTERN, maxLength: 67 }), { minItems: 1, maxItems: 64 }) },
  { ...strict, $id: 'AutoApprover' },
);

export const Network = Type.Object(
  {
    ipv4_cidr: Type.String({ format: 'ipv4-pool', description: 'Pool tunnel IPs are assigned from (/8../30).' }),
    mtu: Type.Integer({ minimum: 576, maximum: 9000 }),
    resolvers: Type.Array(Ip, { maxItems: 16 }),
    routes: Type.Array(Route, { maxItems: 1024 }),
    auto_approve_cidrs: Type.Array(Cidr, {
      maxItems: 256,
      description: "A device's requested route inside one of these prefixes is approved when requested (docs/protocol.md \"Routes\").",
    }),
    auto_approvers: Type.Array(AutoApprover, {
      maxItems: 256,
      description: 'A route requested inside `cidr` by a device carrying one of `tags` is approved when requested (Headscale\'s autoApprovers).',
    }),
  },
  { ...strict, $id: 'Network' },
);

export const NetworkInput = Type.Partial(Network, { ...strict, $id: 'NetworkInput' });

/**
 * Which callers may give each tag (Tailscale's `tagOwners`). Empty: any
 * organization admin gives any tag. Otherwise only the tags listed may be
 * given, each by its owners (and the admin token, and server admins).
 */
export const TagOwners = Type.Record(
  Type.String({ pattern: TAG_PATTERN, maxLength: 67 }),
  Type.Array(Type.String({ pattern: TAG_OWNER_PATTERN, maxLength: 320 }), { maxItems: 64 }),
  { maxProperties: 256, additionalProperties: false, $id: 'TagOwners', description: 'tag:<name> → [role:owner | role:admin | email]; docs/protocol.md "Tags and references".' },
);

export const Organization = Type.Object({
  id: Uuid,
  name: Type.String(),
  description: Type.String(),
  network: Network,
  audit_readable_by_read: Type.Boolean({
    description: "Whether the organization's read tokens and read members may read its audit log (docs/protocol.md \"Audit log\"); admins always may.",
  }),
  tag_owners: TagOwners,
  policy: Type.Optional(
    OrNull(
      Type.Object({ groups: Type.Array(PolicySecurityGroup, { maxItems: 1024 }) }),
      {
        description:
          'Absent or null: the organization\'s access is its objects. Otherwise a policy document manages it (docs/protocol.md "Policy document"): agents enforce these groups, not the security group objects, and `tag_owners` and `network` (but `ipv4_cidr`) are the document\'s.',
      },
    ),
  ),
  revision: Revision,
  created_at: Timestamp,
  updated_at: Timestamp,
}, { $id: 'Organization' });

export const OrganizationList = Type.Object({ items: Type.Array(Organization) }, { $id: 'OrganizationList' });

const Name = Type.String({ minLength: 1, maxLength: 128 });
const Description = Type.String({ maxLength: 1024 });

/**
 * An organization always has an owner, or one invited: `owner_user_id` (an
 * existing user, owner at once) or `owner_email` (an owner invitation to that
 * email), not both. A user creating it is an owner too; the admin token
 * creating it without either gets an owner invitation claimed by its token.
 */
export const OrganizationCreate = Type.Object(
  {
    name: Name,
    description: Type.Optional(Description),
    network: Type.Optional(NetworkInput),
    audit_readable_by_read: Type.Optional(Type.Boolean()),
    tag_owners: Type.Optional(TagOwners),
    owner_user_id: Type.Optional(Uuid),
    owner_email: Type.Optional(InviteeEmail),
  },
  { ...strict, $id: 'OrganizationCreate' },
);

/** The created organization, with the owner invitation made with it, if any (its `token` shown once). */
export const CreatedOrganization = Type.Composite(
  [Organization, Type.Object({ owner_invitation: Type.Optional(CreatedInvitation) })],
  { $id: 'CreatedOrganization' },
);

export const OrganizationPatch = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Description),
    network: Type.Optional(NetworkInput),
    audit_readable_by_read: Type.Optional(Type.Boolean()),
    tag_owners: Type.Optional(TagOwners),
  },
  { ...strict, $id: 'OrganizationPatch' },
);

export type Route = Static<typeof Route>;
export type Network = Static<typeof Network>;
export type AutoApprover = Static<typeof AutoApprover>;
export type TagOwners = Static<typeof TagOwners>;
export type Organization = Static<typeof Organization>;
export type OrganizationCreate = Static<typeof OrganizationCreate>;
export type CreatedOrganization = Static<typeof CreatedOrganization>;
export type OrganizationPatch = Static<typeof OrganizationPatch>;
