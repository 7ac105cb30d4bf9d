/**
 * What `tag:<name>` and `group:<name|id>` in a rule stand for
 * (docs/protocol.md "Tags and references"): the addresses of the devices
 * selected, each device's tunnel IP and the routes it serves. Pure: resolved from the objects the agent watches, so a
 * device joining or leaving a tag or group changes every agent's firewall
 * through that device's one change event.
 */
import { parseDeviceReference, type DeviceObject } from '../../protocol/wire.js';
import type { GroupRules } from './group-binding.js';
import { hostCidr, rangeToInterval, type IpInterval } from './addresses.js';

/** The devices a reference selects, and why none when it can't be resolved. */
export type Selection = { devices: DeviceObject[] } | { devices: []; problem: string };

/**
 * A device's addresses: its tunnel IP, and the routes it serves (`served`:
 * claimRoutes' answer, requested, approved and not claimed by another
 * device), so a rule selects exactly what the peers route to it.
 */
export function deviceAddresses(device: DeviceObject, served: ReadonlyMap<string, readonly string[]>): IpInterval[] {
  const tunnel = hostCidr(device.tunnel_ip);
  return [...(tunnel === undefined ? [] : [tunnel]), ...(served.get(device.id) ?? [])].flatMap((cidr) => rangeToInterval(cidr) ?? []);
}

/**
 * Resolves references against one snapshot of the organization. Groups are
 * looked up once by name and id; a device belongs to the group its
 * `security_group_id` names (bindGroups sets it for devices bound by tag).
 */
export class DeviceSelector {
  private readonly groupByName = new Map<string, GroupRules>();
  private readonly groupIds = new Set<string>();

  constructor(
    private readonly devices: readonly DeviceObject[],
    groups: readonly GroupRules[],
  ) {
    for (const group of groups) {
      this.groupIds.add(group.id);
      if (group.name !== null) this.groupByName.set(group.name, group);
    }
  }

  select(reference: string): Selection {
    const parsed = parseDeviceReference(reference);
    if (!parsed) return { devices: [], problem: 'not a tag:<name> or group:<name> reference' };
    if (parsed.kind === 'tag') return { devices: this.devices.filter((d) => d.tags.includes(parsed.tag)) };
    const id = 'id' in parsed ? (this.groupIds.has(parsed.id) ? parsed.id : undefined) : this.groupByName.get(parsed.name)?.id;
    if (id === undefined) return { devices: [], problem: 'no security group of this name or id' };
    return { devices: this.devices.filter((d) => d.security_group_id === id) };
  }
}
