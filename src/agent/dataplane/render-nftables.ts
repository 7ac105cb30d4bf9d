/**
 * The desired firewall as an nftables script for `nft -f`. The script first
 * declares and deletes table `inet fleetplane`, then defines it whole, so one
 * `nft -f` replaces the table atomically (or changes nothing if it fails).
 */
import type { DesiredDataplane, FirewallRule } from './desired-state.js';

export const NFTABLES_CONF_FILE = 'nftables.conf';
export const NFT_FAMILY = 'inet';
export const NFT_TABLE = 'fleetplane';

/** A script that removes the table if it exists and otherwise does nothing. */
export function renderNftablesRemoval(): string {
  return `table ${NFT_FAMILY} ${NFT_TABLE}\ndelete table ${NFT_FAMILY} ${NFT_TABLE}\n`;
}

function addressSet(elements: readonly string[]): string {
  return elements.length === 1 ? (elements[0] ?? '') : `{ ${elements.join(', ')} }`;
}

function protocolMatch(rule: FirewallRule, family: 4 | 6): string | undefined {
  switch (rule.protocol) {
    case 'tcp':
    case 'udp':
      if (rule.ports === null) return `meta l4proto ${rule.protocol}`;
      return `${rule.protocol} dport ${rule.ports.from === rule.ports.to ? rule.ports.from : `${rule.ports.from}-${rule.ports.to}`}`;
    case 'icmp':
      return family === 4 ? 'meta l4proto icmp' : undefined;
    case 'icmpv6':
      return family === 6 ? 'meta l4proto ipv6-icmp' : undefined;
    case 'any':
      return '';
  }
}

function ruleLines(rule: FirewallRule, direction: 'saddr' | 'daddr'): string[] {
  const out: string[] = [];
  for (const family of [4, 6] as const) {
    const elements = family === 4 ? rule.ipv4 : rule.ipv6;
    const proto = protocolMatch(rule, family);
    if (elements.length === 0 || proto === undefined) continue;
    const whole = family === 4 ? '0.0.0.0/0' : '::/0';
    const address =
      elements.length === 1 && elements[0] === whole
        ? `meta nfproto ${family === 4 ? 'ipv4' : 'ipv6'}`
        : `${family === 4 ? 'ip' : 'ip6'} ${direction} ${addressSet(elements)}`;
    out.push(`\t\t${[address, proto, 'accept'].filter((p) => p !== '').join(' ')}`);
  }
  return out;
}

function filterChain(name: string, rules: readonly FirewallRule[] | null, direction: 'saddr' | 'daddr'): string[] {
  const body =
    rules === null
      ? ['\t\taccept']
      : ['\t\tct state established,related accept', ...rules.flatMap((r) => ruleLines(r, direction)), '\t\tdrop'];
  return [`\tchain ${name} {`, ...body, '\t}'];
}

/**
 * Input and output base chains (priority filter, policy accept) send only
 * traffic on the tunnel interface to the `tunnel-in`/`tunnel-out` chains;
 * other interfaces are untouched. With no security group both accept all.
 */
export function renderNftables(desired: DesiredDataplane): string {
  const iface = JSON.stringify(desired.interface.name);
  const fw = desired.firewall;
  const header =
    fw.mode === 'allow-all'
      ? `# fleetplane: firewall of device ${desired.device_id}: no security group, the tunnel accepts all.`
      : `# fleetplane: firewall of device ${desired.device_id}: security group ${fw.security_group_id}${fw.group_found ? '' : ' (not found: everything new is dropped)'}.`;
  const lines = [
    header,
    renderNftablesRemoval().trimEnd(),
    `table ${NFT_FAMILY} ${NFT_TABLE} {`,
    '\tchain input {',
    '\t\ttype filter hook input priority filter; policy accept;',
    `\t\tiifname ${iface} jump tunnel-in`,
    '\t}',
    '',
    ...filterChain('tunnel-in', fw.mode === 'allow-all' ? null : fw.inbound, 'saddr'),
    '',
    '\tchain output {',
    '\t\ttype filter hook output priority filter; policy accept;',
    `\t\toifname ${iface} jump tunnel-out`,
    '\t}',
    '',
    ...filterChain('tunnel-out', fw.mode === 'allow-all' ? null : fw.outbound, 'daddr'),
    // A relay device forwards between its WireGuard peers, and nowhere else: a peer must not reach this machine's other networks through it.
    ...(desired.forwarding
      ? ['', '\tchain forward {', '\t\ttype filter hook forward priority filter; policy accept;', `\t\tiifname ${iface} oifname ${iface} accept`, `\t\tiifname ${iface} drop`, '\t}']
      : []),
    '}',
  ];
  return `${lines.join('\n')}\n`;
}
