/**
 * Security-group rules → per-family firewall rules. Pure and deterministic.
 */
import type { Rule, SecurityGroup } from '../../protocol/index.js';
import { formatInterval, mergeIntervals, rangeToInterval, type IpInterval } from './addresses.js';

export type FirewallProtocol = Rule['ip_protocol'];

export interface PortRange {
  from: number;
  to: number;
}

/**
 * One accept rule. For inbound rules the addresses are sources, for outbound
 * rules destinations. `ipv4`/`ipv6` are merged, sorted nftables set elements
 * (`ip`, `cidr` or `ip-ip`); an empty list means the rule admits nothing of
 * that family. `ports: null` means every port (always null for icmp, icmpv6
 * and any).
 */
export interface FirewallRule {
  protocol: FirewallProtocol;
  ports: PortRange | null;
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
      inbound: FirewallRule[];
      outbound: FirewallRule[];
    };

/** An input the computation had to leave out, and why. */
export interface SkippedItem {
  kind: 'peer' | 'allowed-ip' | 'endpoint' | 'route' | 'resolver' | 'ip-range';
  subject: string;
  reason: string;
}

const ALL_V4 = '0.0.0.0/0';
const ALL_V6 = '::/0';

function compileRule(rule: Rule, direction: string, skipped: SkippedItem[]): FirewallRule | undefined {
  const withPorts = rule.ip_protocol === 'tcp' || rule.ip_protocol === 'udp';
  const allPorts = rule.from_port === 0 && rule.to_port === 0;
  const ports = withPorts && !allPorts ? { from: rule.from_port, to: Math.max(rule.from_port, rule.to_port) } : null;
  let ipv4: string[];
  let ipv6: string[];
  if (rule.ip_ranges.length === 0) {
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
  if (ipv4.length === 0 && ipv6.length === 0) return undefined;
  return { protocol: rule.ip_protocol, ports, ipv4, ipv6 };
}

function ruleKey(r: FirewallRule): string {
  return JSON.stringify([r.protocol, r.ports?.from ?? -1, r.ports?.to ?? -1, r.ipv4, r.ipv6]);
}

/** Compiles, drops duplicates and rules that can match nothing, sorts. */
export function compileRules(rules: readonly Rule[], direction: 'inbound' | 'outbound', skipped: SkippedItem[]): FirewallRule[] {
  const byKey = new Map<string, FirewallRule>();
  for (const rule of rules) {
    const compiled = compileRule(rule, direction, skipped);
    if (compiled) byKey.set(ruleKey(compiled), compiled);
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r);
}

export function desiredFirewall(
  groupId: string | null,
  groups: readonly SecurityGroup[],
  skipped: SkippedItem[],
): DesiredFirewall {
  if (groupId === null) return { mode: 'allow-all' };
  const group = groups.find((g) => g.id === groupId);
  if (!group) return { mode: 'filter', security_group_id: groupId, group_found: false, inbound: [], outbound: [] };
  return {
    mode: 'filter',
    security_group_id: groupId,
    group_found: true,
    inbound: compileRules(group.inbound_rules, 'inbound', skipped),
    outbound: compileRules(group.outbound_rules, 'outbound', skipped),
  };
}
