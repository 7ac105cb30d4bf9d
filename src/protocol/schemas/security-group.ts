import { Type, type Static } from '@sinclair/typebox';
import { ChangeListOf, OrNull, Revision, Timestamp, Uuid, strict } from './common.js';
import { DEVICE_REFERENCE_PATTERN, GROUP_NAME_PATTERN, TAG_PATTERN } from '../references.js';
import { IP_PROTOCOLS } from '../security-group.js';

const Port = Type.Integer({ minimum: 0, maximum: 65535 });

/**
 * `from_port = to_port = 0` means all ports; otherwise `from_port ≤ to_port`
 * (checked by the server). The rule's addresses (sources of an inbound rule,
 * destinations of an outbound one) are `ip_ranges` and the addresses of the
 * devices `devices` names; with both empty, every address.
 */
export const Rule = Type.Object(
  {
    ip_protocol: Type.Union(IP_PROTOCOLS.map((p) => Type.Literal(p))),
    from_port: Port,
    to_port: Port,
    ip_ranges: Type.Array(Type.String({ format: 'ip-range', description: 'CIDR, IP, or IP-IP' }), { maxItems: 256 }),
    devices: Type.Optional(
      Type.Array(Type.String({ pattern: DEVICE_REFERENCE_PATTERN, maxLength: 70 }), {
        maxItems: 64,
        description: 'Devices by tag (`tag:web`) or security group (`group:db`, or `group:<id>`): their tunnel IPs and approved routes. Absent: none.',
      }),
    ),
  },
  { ...strict, $id: 'Rule' },
);

const Rules = Type.Array(Rule, { maxItems: 512 });
const Description = Type.String({ maxLength: 1024 });
const GroupName = OrNull(Type.String({ pattern: GROUP_NAME_PATTERN, maxLength: 63 }), {
  description: 'Unique among the organization\'s groups; what `group:<name>` references and a policy document name it by. Null: unnamed.',
});

/**
 * Tags whose devices are in the group without naming it: a device with no
 * `security_group_id` is in the first group, in order of name (unnamed
 * groups last, by id), whose `applies_to` holds one of its tags
 * (docs/protocol.md "Tags and references").
 */
export const AppliesTo = Type.Array(Type.String({ pattern: TAG_PATTERN, maxLength: 67 }), { maxItems: 64 });

export const SecurityGroup = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  name: GroupName,
  description: Type.String(),
  applies_to: Type.Optional(AppliesTo),
  inbound_rules: Type.Array(Rule),
  outbound_rules: Type.Array(Rule),
  revision: Revision,
  created_at: Timestamp,
  updated_at: Timestamp,
}, { $id: 'SecurityGroup' });

/**
 * A group as a policy document compiles it, inside its organization
 * (`Organization.policy`): what agents enforce while a document manages the
 * organization's access, in binding order (by name).
 */
export const PolicySecurityGroup = Type.Object(
  { id: Uuid, name: Type.String({ pattern: GROUP_NAME_PATTERN, maxLength: 63 }), description: Type.String(), applies_to: AppliesTo, inbound_rules: Type.Array(Rule), outbound_rules: Type.Array(Rule) },
  { $id: 'PolicySecurityGroup' },
);

/** `GET .../security_groups`: groups, and tombstones with `gt_revision` or a cursor. */
export const SecurityGroupList = ChangeListOf(SecurityGroup, 'SecurityGroupList');

const securityGroupFields = {
  name: Type.Optional(GroupName),
  description: Type.Optional(Description),
  applies_to: Type.Optional(AppliesTo),
  inbound_rules: Type.Optional(Rules), outbound_rules: Type.Optional(Rules) };

export const SecurityGroupCreate = Type.Object(securityGroupFields, { ...strict, $id: 'SecurityGroupCreate' });

export const SecurityGroupPatch = Type.Object(securityGroupFields, { ...strict, $id: 'SecurityGroupPatch' });

export type Rule = Static<typeof Rule>;
export type SecurityGroup = Static<typeof SecurityGroup>;
export type PolicySecurityGroup = Static<typeof PolicySecurityGroup>;
export type SecurityGroupCreate = Static<typeof SecurityGroupCreate>;
export type SecurityGroupPatch = Static<typeof SecurityGroupPatch>;
