import type { Rule } from '../../protocol/wire.js';

/** Protocols whose rules have ports: for the others they mean nothing, and the server refuses any but 0/0 for icmp and icmpv6. */
export const PORTED: ReadonlySet<Rule['ip_protocol']> = new Set<Rule['ip_protocol']>(['tcp', 'udp']);

/** `1 device`, `2 devices`; `many` when the plural isn't the singular plus s. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** A rule's addresses in words: its ranges and device references, or `anywhere` when it has none. */
export function addressesText(r: Pick<Rule, 'ip_ranges' | 'devices'>): string {
  const addresses = [...r.ip_ranges, ...(r.devices ?? [])];
  return addresses.length > 0 ? addresses.join(', ') : 'anywhere';
}

/** One rule in words: `tcp port 443 from 10.0.0.0/8, tag:lb`, `icmp to anywhere`, `any protocol from tag:web`. */
export function ruleText(r: Rule, direction: 'from' | 'to'): string {
  const ports = !PORTED.has(r.ip_protocol)
    ? ''
    : r.from_port === 0 && r.to_port === 0
      ? ' all ports'
      : r.from_port === r.to_port
        ? ` port ${r.from_port}`
        : ` ports ${r.from_port}-${r.to_port}`;
  const protocol = r.ip_protocol === 'any' ? 'any protocol' : r.ip_protocol;
  return `${protocol}${ports} ${direction} ${addressesText(r)}`;
}

/** The first `shown` rules in words, and how many more there are. */
export function rulesPreview(rules: readonly Rule[], direction: 'from' | 'to', shown = 3): { texts: string[]; more: number } {
  return { texts: rules.slice(0, shown).map((r) => ruleText(r, direction)), more: Math.max(0, rules.length - shown) };
}
