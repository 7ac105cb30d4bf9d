/**
 * fast-check arbitraries for the renderer fuzz test: valid desired states
 * (varied, and as the desired-state computation would make them), hostile
 * values, and a desired state with one rendered field replaced by one.
 */
import fc from 'fast-check';
import type { DesiredDataplane, FirewallRule } from '../../../src/agent/dataplane/index.js';
import { canonicalCidr, formatInterval, mergeIntervals, rangeToInterval } from '../../../src/agent/dataplane/addresses.js';

/** What an attacker would put in a field: line breaks, quotes, NUL, nft and ini syntax. */
export const PAYLOADS = [
  '\n',
  '\r\n',
  '\r',
  '\0',
  '\u2028',
  '\u0085',
  '"',
  "'",
  '}',
  '{',
  ';',
  '#',
  '$x',
  '@x',
  '\\',
  '[Peer]',
  '[Interface]',
  'PostUp = touch /tmp/pwned',
  '\nPostUp = touch /tmp/pwned',
  '\n[Peer]\nPublicKey = AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\nAllowedIPs = 0.0.0.0/0',
  'flush ruleset',
  '\nflush ruleset\n',
  '; flush ruleset',
  ' } ; flush ruleset',
  '\n}\ntable ip filter { chain c { type filter hook input priority 0; policy drop; } }',
  'include "/etc/passwd"',
] as const;

const text = fc.string({ unit: 'binary', maxLength: 40 });

/** A hostile value: a payload alone or after (or inside) something valid, odd numbers, other types. */
export function hostileValue(valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  const payload = fc.constantFrom(...PAYLOADS);
  return fc.oneof(
    payload,
    fc.tuple(valid, payload).map(([v, p]) => `${String(v)}${p}`),
    fc.tuple(payload, valid).map(([p, v]) => `${p}${String(v)}`),
    fc.tuple(valid, payload, text).map(([v, p, t]) => `${String(v)}${p}${t}`),
    text,
    fc.constantFrom(70000, 65536, -1, 1.5, 0.1, -0, NaN, Infinity, -Infinity, 1e308, 2 ** 53 + 2, 576.5, 9001, 575),
    fc.double(),
    fc.constantFrom('1420\nPostUp = touch /tmp/pwned', '80', '0x50', '1e3', ' 22', '22 ', '22;'),
    fc.constantFrom(null, undefined, true, false, {}, [], { toString: () => '\nflush ruleset' }, ['a\nb']),
  );
}

export const key = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('base64'));
const port = fc.integer({ min: 0, max: 65535 });
const ipv4 = fc.ipV4();
const ipv6 = fc.ipV6();
const cidr4 = fc.tuple(ipv4, fc.integer({ min: 0, max: 32 })).map(([a, p]) => canonicalCidr(`${a}/${p}`) ?? '0.0.0.0/0');
const cidr6 = fc.tuple(ipv6, fc.integer({ min: 0, max: 128 })).map(([a, p]) => canonicalCidr(`${a}/${p}`) ?? '::/0');
const endpoint = fc.oneof(
  fc.tuple(ipv4, fc.integer({ min: 1, max: 65535 })).map(([a, p]) => `${a}:${p}`),
  fc.tuple(ipv6, fc.integer({ min: 1, max: 65535 })).map(([a, p]) => `[${a}]:${p}`),
);
const interfaceName = fc.stringMatching(/^[A-Za-z0-9_.-]{1,15}$/).filter((n) => n !== '.' && n !== '..');

/** Merged set elements of one family, as the firewall computation writes them. */
function elements(family: 4 | 6): fc.Arbitrary<string[]> {
  const item = family === 4 ? fc.oneof(ipv4, cidr4, fc.tuple(ipv4, ipv4).map(([a, b]) => `${a}-${b}`)) : fc.oneof(ipv6, cidr6);
  return fc.array(item, { minLength: 0, maxLength: 3 }).map((raw) => {
    const intervals = raw.flatMap((r) => {
      const direct = rangeToInterval(r);
      if (direct) return [direct];
      const [a = '', b = ''] = r.split('-');
      const swapped = rangeToInterval(`${b}-${a}`);
      return swapped ? [swapped] : [];
    });
    return mergeIntervals(intervals).map(formatInterval);
  });
}

const rule: fc.Arbitrary<FirewallRule> = fc
  .record({
    protocol: fc.constantFrom('tcp', 'udp', 'icmp', 'icmpv6', 'any') as fc.Arbitrary<FirewallRule['protocol']>,
    a: port,
    b: port,
    withPorts: fc.boolean(),
    ipv4: elements(4),
    ipv6: elements(6),
    sets: fc.uniqueArray(fc.constantFrom('ref0', 'ref1', 'ref2'), { maxLength: 3 }).map((names) => names.sort()),
  })
  .map(({ protocol, a, b, withPorts, ipv4, ipv6, sets }) => ({
    protocol,
    ports: withPorts && (protocol === 'tcp' || protocol === 'udp') ? { from: Math.min(a, b), to: Math.max(a, b) } : null,
    ipv4,
    ipv6,
    sets,
  }));

/** The three sets rules may name, each for a tag or group reference, with members of either family or none. */
const addressSets = fc
  .tuple(
    fc.uniqueArray(fc.stringMatching(/^(?:tag|group):[a-z0-9](?:[a-z0-9-]{0,8}[a-z0-9])?$/), { minLength: 3, maxLength: 3 }),
    fc.array(fc.tuple(elements(4), elements(6)), { minLength: 3, maxLength: 3 }),
  )
  .map(([references, members]) =>
    references.map((reference, i) => ({ name: `ref${i}`, reference, ipv4: members[i]?.[0] ?? [], ipv6: members[i]?.[1] ?? [] })),
  );

const peer = fc.record({
  device_id: fc.uuid(),
  hostname: fc.string({ unit: 'binary', maxLength: 60 }),
  public_key: key,
  allowed_ips: fc.tuple(ipv4, fc.array(fc.oneof(cidr4, cidr6), { maxLength: 3 })).map(([tunnel, more]) => [`${tunnel}/32`, ...more]),
  endpoint: fc.option(endpoint, { nil: null }),
  candidates: fc.constant([] as string[]),
  persistent_keepalive: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 65535 })),
});

/** A valid desired state, varied in every rendered field. */
export const validDesired: fc.Arbitrary<DesiredDataplane> = fc
  .record({
    device_id: fc.uuid(),
    name: interfaceName,
    private_key: key,
    address: fc.tuple(ipv4, fc.integer({ min: 8, max: 30 })).map(([a, p]) => `${a}/${p}`),
    mtu: fc.integer({ min: 576, max: 9000 }),
    listen_port: fc.integer({ min: 1, max: 65535 }),
    resolvers: fc.array(fc.oneof(ipv4, ipv6), { maxLength: 3 }),
    peers: fc.uniqueArray(peer, { maxLength: 4, selector: (p) => p.public_key }),
    forwarding: fc.boolean(),
    subnet_routes: fc.uniqueArray(fc.oneof(cidr4, cidr6), { maxLength: 3 }),
    routes: fc.uniqueArray(
      fc.oneof(
        cidr4.map((destination) => ({ destination, via: null })),
        fc.tuple(cidr4, ipv4).map(([destination, via]) => ({ destination, via })),
        cidr6.map((destination) => ({ destination, via: null })),
      ),
      { maxLength: 3, selector: (r) => r.destination },
    ),
    filter: fc.boolean(),
    security_group_id: fc.uuid(),
    group_found: fc.boolean(),
    sets: addressSets,
    inbound: fc.array(rule, { maxLength: 3 }),
    outbound: fc.array(rule, { maxLength: 3 }),
  })
  .map((r) => ({
    device_id: r.device_id,
    interface: { name: r.name, private_key: r.private_key, address: r.address, mtu: r.mtu, listen_port: r.listen_port, resolvers: r.resolvers },
    peers: r.peers,
    relayed: [],
    forwarding: r.forwarding,
    subnet_routes: r.subnet_routes,
    routes: r.routes,
    firewall: r.filter
      ? {
          mode: 'filter' as const,
          security_group_id: r.security_group_id,
          group_found: r.group_found,
          sets: r.sets,
          inbound: r.inbound,
          outbound: r.outbound,
        }
      : { mode: 'allow-all' as const },
    skipped: [],
  }));

type Path = (string | number)[];

/** Every primitive field of `value` a renderer reads (not the computation's bookkeeping). */
export function leafPaths(value: unknown, path: Path = []): Path[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => leafPaths(v, [...path, i]));
  if (typeof value === 'object' && value !== null) {
    return Object.entries(value).flatMap(([k, v]) => (k === 'skipped' || k === 'candidates' || k === 'relayed' ? [] : leafPaths(v, [...path, k])));
  }
  return [path];
}

/** A deep copy of `desired` with the field at `path` set to `value`. */
export function withField(desired: DesiredDataplane, path: Path, value: unknown): DesiredDataplane {
  const copy = structuredClone(desired) as unknown as Record<string | number, unknown>;
  let node: Record<string | number, unknown> = copy;
  for (const step of path.slice(0, -1)) node = node[step] as Record<string | number, unknown>;
  const last = path.at(-1);
  if (last !== undefined) node[last] = value;
  return copy as unknown as DesiredDataplane;
}

/** A valid desired state with one rendered field replaced by a hostile value. */
export const hostileDesired: fc.Arbitrary<{ desired: DesiredDataplane; path: string; value: unknown }> = fc
  .tuple(validDesired, fc.nat(), hostileValue(fc.oneof(fc.uuid(), port, ipv4, cidr4, key, endpoint)))
  .map(([valid, pick, value]) => {
    const paths = leafPaths(valid);
    const path = paths[pick % paths.length] ?? ['device_id'];
    return { desired: withField(valid, path, value), path: path.join('.'), value };
  });
