import { Type, type Static } from '@sinclair/typebox';
import { Cidr, Ip, strict } from './common.js';
import { IP_PROTOCOLS } from '../security-group.js';
import { POLICY_TEST_PORT_PATTERN } from '../policy.js';
import { AutoApprover, Route, TagOwners } from './organization.js';
import { DEVICE_REFERENCE_PATTERN, GROUP_NAME_PATTERN, TAG_PATTERN } from '../references.js';

const Tag = Type.String({ pattern: TAG_PATTERN, maxLength: 67 });
const Address = Type.String({ maxLength: 70, description: 'A CIDR, an IP, IP-IP, tag:<name> or group:<name>.' });
/** `443`, `8000-8080`; absent: every port. */
const Ports = Type.Union([Type.Integer({ minimum: 1, maximum: 65535 }), Type.String({ pattern: '^[0-9]{1,5}(-[0-9]{1,5})?$' })]);

/** One rule of a policy document's group: `{proto, ports?, from?|to?}`. */
export const PolicyRule = Type.Object(
  {
    proto: Type.Union(IP_PROTOCOLS.map((p) => Type.Literal(p))),
    ports: Type.Optional(Ports),
    from: Type.Optional(Type.Array(Address, { minItems: 1, maxItems: 256 })),
    to: Type.Optional(Type.Array(Address, { minItems: 1, maxItems: 256 })),
  },
  { ...strict, $id: 'PolicyRule' },
);

/** A security group as a policy document writes it: named by its key, applied to the devices of `applies_to`. */
export const PolicyGroup = Type.Object(
  {
    description: Type.Optional(Type.String({ maxLength: 1024 })),
    applies_to: Type.Optional(Type.Array(Tag, { maxItems: 64 })),
    inbound: Type.Optional(Type.Array(PolicyRule, { maxItems: 512 })),
    outbound: Type.Optional(Type.Array(PolicyRule, { maxItems: 512 })),
  },
  { ...strict, $id: 'PolicyGroup' },
);

/** One test of a policy document: whether `from` may reach `to` on `port`. */
export const PolicyTest = Type.Object(
  {
    from: Type.String({ pattern: DEVICE_REFERENCE_PATTERN }),
    to: Type.String({ pattern: DEVICE_REFERENCE_PATTERN }),
    port: Type.String({ pattern: POLICY_TEST_PORT_PATTERN }),
    expect: Type.Union([Type.Literal('allow'), Type.Literal('deny')]),
  },
  { ...strict, $id: 'PolicyTest' },
);

/**
 * An organization's policy document (docs/protocol.md "Policy document"),
 * as parsed from its YAML: who may give each tag, which requested routes
 * are approved by tag, the network settings, the security groups by name,
 * and the tests it must pass before it is applied.
 */
export const PolicyDocument = Type.Object(
  {
    tag_owners: Type.Optional(TagOwners),
    auto_approvers: Type.Optional(Type.Array(AutoApprover, { maxItems: 256 })),
    network: Type.Optional(
      Type.Object(
        {
          mtu: Type.Optional(Type.Integer({ minimum: 576, maximum: 9000 })),
          resolvers: Type.Optional(Type.Array(Ip, { maxItems: 16 })),
          routes: Type.Optional(Type.Array(Route, { maxItems: 1024 })),
          auto_approve_cidrs: Type.Optional(Type.Array(Cidr, { maxItems: 256 })),
        },
        strict,
      ),
    ),
    security_groups: Type.Optional(
      Type.Record(Type.String({ pattern: GROUP_NAME_PATTERN }), PolicyGroup, { maxProperties: 1024, additionalProperties: false }),
    ),
    tests: Type.Optional(Type.Array(PolicyTest, { maxItems: 1024 })),
  },
  { ...strict, $id: 'PolicyDocument' },
);

export type PolicyRule = Static<typeof PolicyRule>;
export type PolicyGroup = Static<typeof PolicyGroup>;
export type PolicyTest = Static<typeof PolicyTest>;
export type PolicyDocument = Static<typeof PolicyDocument>;

/** One difference between an organization's current policy and a document: `path` names the group, tag, field or list. */
export const PolicyChange = Type.Object(
  {
    op: Type.Union([Type.Literal('add'), Type.Literal('remove'), Type.Literal('change')]),
    path: Type.String(),
    from: Type.Optional(Type.Unknown()),
    to: Type.Optional(Type.Unknown()),
  },
  { $id: 'PolicyChange' },
);

/**
 * The answer to `PUT .../policy`: whether the organization is now managed
 * by the document, whether this request wrote it (not for a dry run, nor
 * when nothing changes), the document's ETag, the organization's revision
 * (the one written, or the current one), what changed (or would), and how
 * many of the document's tests ran and passed.
 */
export const PolicyApplyResult = Type.Object(
  {
    managed: Type.Boolean(),
    applied: Type.Boolean(),
    dry_run: Type.Boolean(),
    etag: Type.String(),
    revision: Type.Integer({ minimum: 0 }),
    changes: Type.Array(PolicyChange),
    tests: Type.Object({ total: Type.Integer({ minimum: 0 }), passed: Type.Integer({ minimum: 0 }) }),
  },
  { $id: 'PolicyApplyResult' },
);

/** The answer to `DELETE .../policy`: the organization's objects are editable again, with the same effect. */
export const PolicyReleaseResult = Type.Object({ managed: Type.Literal(false), revision: Type.Integer({ minimum: 0 }) }, { $id: 'PolicyReleaseResult' });

export type PolicyChange = Static<typeof PolicyChange>;
export type PolicyApplyResult = Static<typeof PolicyApplyResult>;
export type PolicyReleaseResult = Static<typeof PolicyReleaseResult>;
