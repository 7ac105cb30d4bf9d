/**
 * The desired firewall as an nftables script for `nft -f`. The script first
 * declares and deletes table `inet fleetplane`, then defines it whole, so one
 * `nft -f` replaces the table atomically (or changes nothing if it fails).
 * Every statement is on the agent's own table: the text is built from
 * literals and typed Tokens only (rendered-text.ts), and
 * `assertOwnTableOnly` (nft-own-table.ts) checks it before `nft` sees it.
 */
import type { AddressSet, DesiredDataplane, FirewallRule } from './desired-state.js';
import { IP_PROTOCOLS } from '../../protocol/wire.js';
import { renderRoutingChains } from './render-nftables-routing.js';
import {
  addressRange,
  comment,
  fileOf,
  integer,
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

/** `ref<N>_v4` / `ref<N>_v6`: built from the set's index only, so no reference text reaches a statement. */
function setName(name: string, family: 4 | 6): Token {
  const match = /^ref([0-9]{1,4})$/.exec(name);
  if (!match?.[1]) throw new RenderValueError('a set name', name);
  return phrase`${literal('ref')}${integer(Number(match[1]), 0, 9999, 'set index')}${family === 4 ? literal('_v4') : literal('_v6')}`;
}

/** Each reference's named set, per family (a family without members has no set: no rule names it). */
function setLines(sets: readonly AddressSet[]): Line[] {
  const out: Line[] = [];
  for (const set of sets) {
    for (const family of [4, 6] as const) {
      const elements = family === 4 ? set.ipv4 : set.ipv6;
      if (elements.length === 0) continue;
      const tokens = elements.map((e) => addressRange(e, 'set element'));
      out.push(
        line`\tset ${setName(set.name, family)} {`,
        line`\t\ttype ${family === 4 ? literal('ipv4_addr') : literal('ipv6_addr')}`,
        line`\t\tflags interval`,
        line`\t\telements = { ${joined(tokens, ', ')} }`,
        line`\t}`,
        line``,
      );
    }
  }
  return out;
}

function ruleLines(rule: FirewallRule, direction: 'saddr' | 'daddr', sets: ReadonlyMap<string, AddressSet>): Line[] {
  const out: Line[] = [];
  const dir = literal(direction === 'saddr' ? 'saddr' : 'daddr');
  for (const family of [4, 6] as const) {
    const proto = protocolMatch(rule, family);
    if (proto === undefined) continue;
    const ipWord = family === 4 ? literal('ip') : literal('ip6');
    const addresses: Token[] = [];
    const elements = family === 4 ? rule.ipv4 : rule.ipv6;
    const whole = family === 4 ? '0.0.0.0/0' : '::/0';
    if (elements.length === 1 && elements[0] === whole) addresses.push(family === 4 ? literal('meta nfproto ipv4') : literal('meta nfproto ipv6'));
    else if (elements.length > 0) addresses.push(phrase`${ipWord} ${dir} ${addressSet(elements)}`);
    for (const name of rule.sets) {
      const set = sets.get(name);
      if (!set || (family === 4 ? set.ipv4 : set.ipv6).length === 0) continue;
      addresses.push(phrase`${ipWord} ${dir} @${setName(name, family)}`);
    }
    for (const address of addresses) out.push(line`\t\t${joined([address, proto, literal('accept')].filter((p) => p !== ''), ' ')}`);
  }
  return out;
}

function filterChain(name: Token, rules: readonly FirewallRule[] | null, direction: 'saddr' | 'daddr', sets: ReadonlyMap<string, AddressSet>): Line[] {
  const body =
    rules === null
      ? [line`\t\taccept`]
      : [line`\t\tct state established,related accept`, ...rules.flatMap((r) => ruleLines(r, direction, sets)), line`\t\tdrop`];
  return [line`\tchain ${name} {`, ...body, line`\t}`];
}

function header(desired: DesiredDataplane): Line[] {
  const device = uuid(desired.device_id, 'device id');
  const fw = desired.firewall;
  if (fw.mode === 'allow-all') return [line`# fleetplane: firewall of device ${device}: no security group, the tunnel accepts all.`];
  const group = uuid(fw.security_group_id, 'security group id');
  if (!fw.group_found) return [line`# fleetplane: firewall of device ${device}: security group ${group} (not found: everything new is dropped).`];
  return [
    line`# fleetplane: firewall of device ${device}: security group ${group}.`,
    ...fw.sets.map((set) =>
      set.ipv4.length + set.ipv6.length === 0
        ? line`# fleetplane: ${comment(set.reference)} selects no device: what names it matches nothing.`
        : line`# fleetplane: sets ${setName(set.name, 4)} and ${setName(set.name, 6)}: the devices of ${comment(set.reference)}.`,
    ),
  ];
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
  const sets = new Map(fw.mode === 'filter' ? fw.sets.map((set) => [set.name, set]) : []);
  const lines: Line[] = [
    ...header(desired),
    ...REMOVAL,
    line`table ${TABLE} {`,
    ...setLines([...sets.values()]),
    line`\tchain input {`,
    line`\t\ttype filter hook input priority filter; policy accept;`,
    line`\t\tiifname ${iface} jump tunnel-in`,
    line`\t}`,
    line``,
    ...filterChain(literal('tunnel-in'), fw.mode === 'allow-all' ? null : fw.inbound, 'saddr', sets),
    line``,
    line`\tchain output {`,
    line`\t\ttype filter hook output priority filter; policy accept;`,
    line`\t\toifname ${iface} jump tunnel-out`,
    line`\t}`,
    line``,
    ...filterChain(literal('tunnel-out'), fw.mode === 'allow-all' ? null : fw.outbound, 'daddr', sets),
    ...renderRoutingChains(desired, iface),
    line`}`,
  ];
  return fileOf(lines);
}
