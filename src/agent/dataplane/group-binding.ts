/**
 * Which groups a device's firewall is built from, and which group each
 * device is in (docs/protocol.md "Tags and references", "Policy
 * document"): the organization's policy groups while a document manages it,
 * else its security group objects; a device is in the group its
 * `security_group_id` names, or else in the first group, by name, whose
 * `applies_to` holds one of its tags. Pure.
 */
import { bindingOrder, boundGroupId, type BindableGroup, type DeviceObject, type Organization, type Rule } from '../../protocol/wire.js';

/** What the firewall reads of a group, an object's or a policy document's. */
export interface GroupRules extends BindableGroup {
  readonly inbound_rules: readonly Rule[];
  readonly outbound_rules: readonly Rule[];
}

export interface BoundGroups {
  /** In binding order. */
  groups: readonly GroupRules[];
  /** The devices, each with `security_group_id` set to the group it is in. */
  devices: readonly DeviceObject[];
}

export function bindGroups(organization: Organization, devices: readonly DeviceObject[], securityGroups: readonly GroupRules[]): BoundGroups {
  const groups = bindingOrder(organization.policy ? organization.policy.groups : securityGroups);
  // Most organizations bind by id only: their devices are used as they are, not copied.
  if (!groups.some((g) => (g.applies_to ?? []).length > 0)) return { groups, devices };
  return {
    groups,
    devices: devices.map((d) => {
      const bound = boundGroupId(d, groups);
      return bound === d.security_group_id ? d : { ...d, security_group_id: bound };
    }),
  };
}
