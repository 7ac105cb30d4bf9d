import { IP_PROTOCOLS, isIpRange, parseDeviceReference, type Rule } from '../../protocol/wire.js';
import { UsageError } from '../exit-codes.js';
import type { Flags } from './argv.js';

type IpProtocol = (typeof IP_PROTOCOLS)[number];

/** The --help text of the rule flags. */
export const RULE_GRAMMAR = [
  'Rules as flags (they replace the group\'s inbound or outbound rules; --data stays for raw JSON):',
  '  --allow PROTO[:PORTS]        one inbound rule; PROTO is tcp, udp, icmp, icmpv6 or any;',
  '                               PORTS (tcp and udp only) is N or N-M, 1..65535; default all ports',
  '  --from SRC[,SRC...]          sources of the --allow before it; SRC is a CIDR, an IP, IP-IP, or the',
  '                               devices of a tag (tag:web) or security group (group:db);',
  '                               repeatable; without --from the rule allows any source',
  '  --egress-allow PROTO[:PORTS] one outbound rule, as --allow',
  '  --to DST[,DST...]            destinations of the --egress-allow before it, as --from; default any',
].join('\n');

/** Inbound and outbound rules given as flags; a side is undefined when no flag gave it. */
export interface RuleFlags {
  inbound: Rule[] | undefined;
  outbound: Rule[] | undefined;
}

function isProtocol(p: string): p is IpProtocol {
  return (IP_PROTOCOLS as readonly string[]).includes(p);
}

function port(flag: string, spec: string, text: string): number {
  const n = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1 && n <= 65535)) throw new UsageError(`${flag} ${spec}: a port is 1..65535, not ${JSON.stringify(text)} (leave PORTS out for all ports)`);
  return n;
}

/** `tcp:22`, `udp:51820-51830`, `icmp`, `any` → a rule with no ranges yet. */
export function parseRuleSpec(flag: string, spec: string): Rule {
  const [protoText = '', ports, ...more] = spec.split(':');
  const proto = protoText.toLowerCase();
  if (more.length > 0 || !isProtocol(proto)) {
    throw new UsageError(`${flag} ${JSON.stringify(spec)}: expected PROTO[:PORTS] with PROTO one of ${IP_PROTOCOLS.join(', ')}`);
  }
  if (ports === undefined) return { ip_protocol: proto, from_port: 0, to_port: 0, ip_ranges: [] };
  if (proto !== 'tcp' && proto !== 'udp') throw new UsageError(`${flag} ${spec}: only tcp and udp take ports`);
  const [fromText = '', toText, ...rest] = ports.split('-');
  if (rest.length > 0) throw new UsageError(`${flag} ${spec}: PORTS is N or N-M`);
  const from = port(flag, spec, fromText);
  const to = toText === undefined ? from : port(flag, spec, toText);
  if (to < from) throw new UsageError(`${flag} ${spec}: the range ends before it starts`);
  return { ip_protocol: proto, from_port: from, to_port: to, ip_ranges: [] };
}

/** Adds the addresses and device references of one --from/--to to `rule`. */
function addAddresses(rule: Rule, flag: string, text: string): void {
  for (const item of text.split(',').map((r) => r.trim())) {
    if (parseDeviceReference(item)) (rule.devices ??= []).push(item);
    else if (isIpRange(item)) rule.ip_ranges.push(item);
    else throw new UsageError(`${flag} ${JSON.stringify(item)}: expected a CIDR (10.0.0.0/8), an IP, a range IP-IP, tag:<name> or group:<name>`);
  }
}

/**
 * Reads --allow/--from and --egress-allow/--to in command-line order: each
 * --from adds sources to the --allow before it, each --to destinations to
 * the --egress-allow before it.
 */
export function rulesFromFlags(flags: Flags): RuleFlags {
  const out: RuleFlags = { inbound: undefined, outbound: undefined };
  let last: { side: 'inbound' | 'outbound'; rule: Rule } | undefined;
  for (const o of flags.ordered(['allow', 'from', 'egress-allow', 'to'])) {
    const text = String(o.value);
    if (o.name === 'allow' || o.name === 'egress-allow') {
      const side = o.name === 'allow' ? 'inbound' : 'outbound';
      last = { side, rule: parseRuleSpec(o.raw, text) };
      (out[side] ??= []).push(last.rule);
      continue;
    }
    const wants = o.name === 'from' ? 'inbound' : 'outbound';
    const owner = wants === 'inbound' ? '--allow' : '--egress-allow';
    if (last === undefined || last.side !== wants) throw new UsageError(`${o.raw} must follow an ${owner} (it gives that rule's ${o.name === 'from' ? 'sources' : 'destinations'})`);
    addAddresses(last.rule, o.raw, text);
  }
  return out;
}

/** `tcp:22 from 10.0.0.0/8`, `icmp`, `udp:51820-51830`: a rule as the flags would write it. */
export function formatRule(rule: Rule, direction: 'from' | 'to'): string {
  const all = rule.from_port === 0 && rule.to_port === 0;
  const ports = all ? '' : rule.from_port === rule.to_port ? `:${rule.from_port}` : `:${rule.from_port}-${rule.to_port}`;
  const addresses = [...rule.ip_ranges, ...(rule.devices ?? [])];
  const ranges = addresses.length === 0 ? '' : ` ${direction} ${addresses.join(',')}`;
  return `${rule.ip_protocol}${ports}${ranges}`;
}
