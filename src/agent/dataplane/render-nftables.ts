/**
 * The desired firewall as an nftables script for `nft -f`. The script first
 * declares and deletes table `inet fleetplane`, then defines it whole, so one
 * `nft -f` replaces the table atomically (or changes nothing if it fails).
 * Every statement is on the agent's own table: the text is built from
 * literals and typed Tokens only (rendered-text.ts), and
 * `assertOwnTableOnly` (nft-own-table.ts) checks it before `nft` sees it.
 */
import type { DesiredDataplane, FirewallRule } from './desired-state.js';
import { IP_PROTOCOLS } from '../../protocol/index.js';
import {
  addressRange,
  fileOf,
  interfaceName,
  joined,
  line,
  literal,
  oneOf,
  RenderValueError,
  phrase,
  port,
  uuid,
  type Line,
  type Token,
} from './rendered-text.js';

export const NFTABLES_CONF_FILE = 'nftables.conf';
export const NFT_FAMILY = 'inet';
export const NFT_TABLE = 'fleetplane';

const TABLE = phrase`${literal(NFT_FAMILY)} ${literal(NFT_TABLE)}`;
const REMOVAL: readonly Line[] = [line`table ${TABLE}`, line`delete table ${TABLE}`];

/** A script that removes the table if it exists and otherwise does nothing. */
export function renderNftablesRemoval(): string {
  return fileOf(REMOVAL);
}

function addressSet(elements: readonly string[]): Token {
  const tokens = elements.map((e) => addressRange(e, 'firewall address'));
  return tokens.length === 1 && tokens[0] !== undefined ? tokens[0] : phrase`{ ${joined(tokens, ', ')} }`;
}

function ports(rule: FirewallRule): Token {
  if (rule.ports === null) return literal('');
  const from = port(rule.ports.from, 'rule port');
  const to = port(rule.ports.to, 'rule port');
  if (Number(from) > Number(to)) throw new RenderValueError('a port range', `${from}-${to}`);
  return from === to ? from : phrase`${from}-${to}`;
}

function protocolMatch(rule: FirewallRule, family: 4 | 6): Token | undefined {
  const protocol = oneOf(rule.protocol, IP_PROTOCOLS, 'rule protocol');
  switch (rule.protocol) {
    case 'tcp':
    case 'udp':
      if (rule.ports === null) return phrase`meta l4proto ${protocol}`;
      return phrase`${protocol} dport ${ports(rule)}`;
    case 'icmp':
      return family === 4 ? literal('meta l4proto icmp') : undefined;
    case 'icmpv6':
      return family === 6 ? literal('meta l4proto ipv6-icmp') : undefined;
    case 'any':
      return literal('');
  }
}

function ruleLines(rule: FirewallRule, direction: 'saddr' | 'daddr'): Line[] {
  const out: Line[] = [];
  const dir = literal(direction === 'saddr' ? 'saddr' : 'daddr');
  for (const family of [4, 6] as const) {
    const elements = family === 4 ? rule.ipv4 : rule.ipv6;
    const proto = protocolMatch(rule, family);
    if (elements.length === 0 || proto === undefined) continue;
    const whole = family === 4 ? '0.0.0.0/0' : '::/0';
    const address =
      elements.length === 1 && elements[0] === whole
        ? family === 4
          ? literal('meta nfproto ipv4')
          : literal('meta nfproto ipv6')
        : phrase`${family === 4 ? literal('ip') : literal('ip6')} ${dir} ${addressSet(elements)}`;
    out.push(line`\t\t${joined([address, proto, literal('accept')].filter((p) => p !== ''), ' ')}`);
  }
  return out;
}

function filterChain(name: Token, rules: readonly FirewallRule[] | null, direction: 'saddr' | 'daddr'): Line[] {
  const body =
    rules === null
      ? [line`\t\taccept`]
      : [line`\t\tct state established,related accept`, ...rules.flatMap((r) => ruleLines(r, direction)), line`\t\tdrop`];
  return [line`\tchain ${name} {`, ...body, line`\t}`];
}

function header(desired: DesiredDataplane): Line {
  const device = uuid(desired.device_id, 'device id');
  const fw = desired.firewall;
  if (fw.mode === 'allow-all') return line`# fleetplane: firewall of device ${device}: no security group, the tunnel accepts all.`;
  const group = uuid(fw.security_group_id, 'security group id');
  return fw.group_found
    ? line`# fleetplane: firewall of device ${device}: security group ${group}.`
    : line`# fleetplane: firewall of device ${device}: security group ${group} (not found: everything new is dropped).`;
}

/**
 * Input and output base chains (priority filter, policy accept) send only
 * traffic on the tunnel interface to the `tunnel-in`/`tunnel-out` chains;
 * other interfaces are untouched. With no security group both accept all.
 * Throws RenderValueError when a value is not of its type.
 */
export function renderNftables(desired: DesiredDataplane): string {
  const iface = phrase`"${interfaceName(desired.interface.name)}"`;
  const fw = desired.firewall;
  const lines: Line[] = [
    header(desired),
    ...REMOVAL,
    line`table ${TABLE} {`,
    line`\tchain input {`,
    line`\t\ttype filter hook input priority filter; policy accept;`,
    line`\t\tiifname ${iface} jump tunnel-in`,
    line`\t}`,
    line``,
    ...filterChain(literal('tunnel-in'), fw.mode === 'allow-all' ? null : fw.inbound, 'saddr'),
    line``,
    line`\tchain output {`,
    line`\t\ttype filter hook output priority filter; policy accept;`,
    line`\t\toifname ${iface} jump tunnel-out`,
    line`\t}`,
    line``,
    ...filterChain(literal('tunnel-out'), fw.mode === 'allow-all' ? null : fw.outbound, 'daddr'),
    // A relay device forwards between its WireGuard peers, and nowhere else: a peer must not reach this machine's other networks through it.
    ...(desired.forwarding === true
      ? [
          line``,
          line`\tchain forward {`,
          line`\t\ttype filter hook forward priority filter; policy accept;`,
          line`\t\tiifname ${iface} oifname ${iface} accept`,
          line`\t\tiifname ${iface} drop`,
          line`\t}`,
        ]
      : []),
    line`}`,
  ];
  return fileOf(lines);
}
