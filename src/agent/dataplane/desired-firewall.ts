/**
 * Security-group rules → per-family firewall rules. Pure and deterministic.
 */
import type { DeviceObject, Rule } from '../../protocol/index.js';
import type { GroupRules } from './group-binding.js';
import { formatInterval, mergeIntervals, rangeToInterval, type IpInterval } from './addresses.js';
import { DeviceSelector, deviceAddresses } from './device-references.js';

export type FirewallProtocol = Rule['ip_protocol'];

export interface PortRange {
  from: number;
  to: number;
}

/**
 * One accept rule. For inbound rules the addresses are sources, for outbound
 * rules destinations: `ipv4`/`ipv6` (merged, sorted nftables set elements:
 * `ip`, `cidr` or `ip-ip`) and the members of the named `sets`. An empty
 * list admits nothing of that family. `ports: null` means every port
 * (always null for icmp, icmpv6 and any).
 */
export interface FirewallRule {
  protocol: FirewallProtocol;
  ports: PortRange | null;
  ipv4: string[];
  ipv6: string[];
  /** Names of AddressSets (`ref0`, …), sorted. */
  sets: string[];
}

/**
 * The addresses of the devices one reference selects (`tag:web`), as an
 * nftables named set: rules name it, so a membership change changes its
 * elements, not the number of rules.
 */
export interface AddressSet {
  /** `ref<N>`, N the reference's place in sorted order. */
  name: string;
  reference: string;
  ipv4: string[];
  ipv6: string[];
}

/**
 * `allow-all`: the device has no security group; everything on the tunnel is
 * accepted. `filter`: established/related traffic and what the rules allow is
 * accepted, the rest on the tunnel is dropped. `group_found: false` means the
 * device names a group this snapshot doesn't contain: no rules (fail closed)
 * until it arrives.
 */
export type DesiredFirewall =
  | { mode: 'allow-all' }
  | {
      mode: 'filter';
      security_group_id: string;
      group_found: boolean;
      /** The sets the rules name, sorted by name. */
      sets: AddressSet[];
      inbound: FirewallRule[];
      outbound: FirewallRule[];
    };

/** An input the computation had to leave out, and why. */
export interface SkippedItem {
  kind: 'peer' | 'allowed-ip' | 'endpoint' | 'route' | 'resolver' | 'ip-range' | 'reference';
  subject: string;
  reason: string;
}

const ALL_V4 = '0.0.0.0/0';
const ALL_V6 = '::/0';

function compileRule(rule: Rule, direction: string, setNames: ReadonlyMap<string, string>, skipped: SkippedItem[]): FirewallRule | undefined {
  const withPorts = rule.ip_protocol === 'tcp' || rule.ip_protocol === 'udp';
  const allPorts = rule.from_port === 0 && rule.to_port === 0;
  const ports = withPorts && !allPorts ? { from: rule.from_port, to: Math.max(rule.from_port, rule.to_port) } : null;
  const references = rule.devices ?? [];
  const sets = [...new Set(references.map((r) => setNames.get(r)).filter((n): n is string => n !== undefined))].sort();
  let ipv4: string[];
  let ipv6: string[];
  if (rule.ip_ranges.length === 0 && references.length === 0) {
    // An empty list means "any address", as in Nexodus; a list whose entries are all invalid matches nothing.
    ipv4 = [ALL_V4];
    ipv6 = [ALL_V6];
  } else {
    const intervals: IpInterval[] = [];
    for (const range of rule.ip_ranges) {
      const iv = rangeToInterval(range);
      if (iv) intervals.push(iv);
      else skipped.push({ kind: 'ip-range', subject: `${direction} ${range}`, reason: 'not a CIDR, IP or IP-IP range' });
    }
    const merged = mergeIntervals(intervals);
    ipv4 = merged.filter((iv) => iv.family === 4).map(formatInterval);
    ipv6 = merged.filter((iv) => iv.family === 6).map(formatInterval);
  }
  if (rule.ip_protocol === 'icmp') ipv6 = [];
  if (rule.ip_protocol === 'icmpv6') ipv4 = [];
  // A rule naming only devices still stands with no member yet: its sets fill as devices join.
  if (ipv4.length === 0 && ipv6.length === 0 && sets.length === 0) return undefined;
  return { protocol: rule.ip_protocol, ports, ipv4, ipv6, sets };
}

function ruleKey(r: FirewallRule): string {
  return JSON.stringify([r.protocol, r.ports?.from ?? -1, r.ports?.to ?? -1, r.ipv4, r.ipv6, r.sets]);
}

/** Compiles, drops duplicates and rules that can match nothing, sorts. `setNames`: each reference's set. */
export function compileRules(
  rules: readonly Rule[],
  direction: 'inbound' | 'outbound',
  skipped: SkippedItem[],
  setNames: ReadonlyMap<string, string> = new Map(),
): FirewallRule[] {
  const byKey = new Map<string, FirewallRule>();
  for (const rule of rules) {
    const compiled = compileRule(rule, direction, setNames, skipped);
    if (compiled) byKey.set(ruleKey(compiled), compiled);
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r);
}

/** One set per reference the group's rules make, named in sorted order of the references. */
function addressSets(
  group: GroupRules,
  devices: readonly DeviceObject[],
  groups: readonly GroupRules[],
  served: ReadonlyMap<string, readonly string[]>,
  skipped: SkippedItem[],
): AddressSet[] {
  const references = new Set<string>();
  for (const rule of [...group.inbound_rules, ...group.outbound_rules]) for (const r of rule.devices ?? []) references.add(r);
  if (references.size === 0) return [];
  const selector = new DeviceSelector(devices, groups);
  return [...references].sort().map((reference, i) => {
    const selection = selector.select(reference);
    if ('problem' in selection) skipped.push({ kind: 'reference', subject: reference, reason: selection.problem });
    const merged = mergeIntervals(selection.devices.flatMap((d) => deviceAddresses(d, served)));
    return {
      name: `ref${i}`,
      reference,
      ipv4: merged.filter((iv) => iv.family === 4).map(formatInterval),
      ipv6: merged.filter((iv) => iv.family === 6).map(formatInterval),
    };
  });
}

/**
 * The firewall of a device in group `groupId` (null: none), its references
 * resolved against `devices` and `groups`; `served`: the routes each device
 * serves, by id (claimRoutes).
 */
export function desiredFirewall(
  groupId: string | null,
  devices: readonly DeviceObject[],
  groups: readonly GroupRules[],
  served: ReadonlyMap<string, readonly string[]>,
  skipped: SkippedItem[],
): DesiredFirewall {
  if (groupId === null) return { mode: 'allow-all' };
  const group = groups.find((g) => g.id === groupId);
  if (!group) return { mode: 'filter', security_group_id: groupId, group_found: false, sets: [], inbound: [], outbound: [] };
  const sets = addressSets(group, devices, groups, served, skipped);
  const setNames = new Map(sets.map((s) => [s.reference, s.name]));
  return {
    mode: 'filter',
    security_group_id: groupId,
    group_found: true,
    sets,
    inbound: compileRules(group.inbound_rules, 'inbound', skipped, setNames),
    outbound: compileRules(group.outbound_rules, 'outbound', skipped, setNames),
  };
}
