/**
 * Pure IP address helpers shared by the server (validation, tunnel IP
 * assignment), the SDK and the agent. No Node built-ins: this module must run
 * in browsers too.
 */

/** An IPv4 address as an unsigned 32-bit integer, or undefined if `text` isn't one. */
export function parseIpv4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(part)) return undefined;
    const n = Number(part);
    if (n > 255) return undefined;
    value = value * 256 + n;
  }
  return value;
}

export function formatIpv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}

/** True when `text` is a valid IPv6 address (with optional embedded IPv4 tail). */
export function isIpv6(text: string): boolean {
  if (text.length < 2 || text.length > 45 || text.includes('%')) return false;
  let head = text;
  let v4Groups = 0;
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    if (parseIpv4(text.slice(lastColon + 1)) === undefined) return false;
    head = `${text.slice(0, lastColon + 1)}0`;
    v4Groups = 1;
  }
  const halves = head.split('::');
  if (halves.length > 2) return false;
  const groups = (s: string): string[] | undefined => (s === '' ? [] : s.split(':'));
  const left = groups(halves[0] ?? '');
  const right = halves.length === 2 ? groups(halves[1] ?? '') : [];
  if (!left || !right) return false;
  for (const g of [...left, ...right]) if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return false;
  const count = left.length + right.length + v4Groups;
  return halves.length === 2 ? count <= 7 : count === 8;
}

export type IpFamily = 4 | 6;

export function ipFamily(text: string): IpFamily | undefined {
  if (parseIpv4(text) !== undefined) return 4;
  if (isIpv6(text)) return 6;
  return undefined;
}

export interface ParsedCidr {
  family: IpFamily;
  address: string;
  prefix: number;
}

/** Parses `addr/prefix`; host bits may be set (as `ip route` accepts). */
export function parseCidr(text: string): ParsedCidr | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const address = text.slice(0, slash);
  const prefixText = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  const family = ipFamily(address);
  if (family === undefined) return undefined;
  if (prefix > (family === 4 ? 32 : 128)) return undefined;
  return { family, address, prefix };
}

/** An IPv4 pool: first and last usable host addresses of a CIDR. */
export interface Ipv4Pool {
  network: number;
  prefix: number;
  first: number;
  last: number;
}

export function ipv4Pool(cidr: string): Ipv4Pool | undefined {
  const parsed = parseCidr(cidr);
  if (!parsed || parsed.family !== 4) return undefined;
  const addr = parseIpv4(parsed.address);
  if (addr === undefined) return undefined;
  const size = 2 ** (32 - parsed.prefix);
  const network = addr - (addr % size);
  // /31 and /32 have no network or broadcast address to skip.
  if (size <= 2) return { network, prefix: parsed.prefix, first: network, last: network + size - 1 };
  return { network, prefix: parsed.prefix, first: network + 1, last: network + size - 2 };
}

/** `ip`, `cidr` or `ip-ip` (same family, start ≤ end). */
export function isIpRange(text: string): boolean {
  if (text.includes('/')) return parseCidr(text) !== undefined;
  const dash = text.indexOf('-');
  if (dash < 0) return ipFamily(text) !== undefined;
  const start = text.slice(0, dash);
  const end = text.slice(dash + 1);
  const family = ipFamily(start);
  if (family === undefined || ipFamily(end) !== family) return false;
  if (family === 4) return (parseIpv4(start) ?? 0) <= (parseIpv4(end) ?? -1);
  return compareIpv6(start, end) <= 0;
}

/** The eight 16-bit groups of a valid IPv6 address (an embedded IPv4 tail becomes the last two). */
export function ipv6Groups(text: string): number[] {
  let t = text;
  const lastColon = t.lastIndexOf(':');
  const tail = t.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = parseIpv4(tail) ?? 0;
    t = `${t.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const [l = '', r] = t.split('::');
  const left = l === '' ? [] : l.split(':');
  const right = r === undefined || r === '' ? [] : r.split(':');
  const zeros = new Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((g) => parseInt(g, 16));
}

function compareIpv6(a: string, b: string): number {
  const x = ipv6Groups(a);
  const y = ipv6Groups(b);
  for (let i = 0; i < 8; i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** `host:port` or `[v6]:port` with a port in 1..65535. */
export function isEndpointAddress(text: string): boolean {
  const m = /^(?:\[([^\]]+)\]|([^:\[\]]+)):(\d{1,5})$/.exec(text);
  if (!m) return false;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return false;
  if (m[1] !== undefined) return isIpv6(m[1]);
  return m[2] !== undefined && parseIpv4(m[2]) !== undefined;
}

/**
 * IPv6 as inet_ntop writes it (what `wg` and `ip` print): RFC 5952 zero
 * compression, lower case, and an IPv4 tail for `::a.b.c.d` and
 * `::ffff:a.b.c.d`. `groups`: the eight 16-bit groups (see ipv6Groups).
 */
export function formatIpv6(groups: readonly number[]): string {
  const words = Array.from({ length: 8 }, (_, i) => (groups[i] ?? 0) & 0xffff);
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (bestLen < 2) bestStart = -1;
  const hex = (from: number, to: number): string[] => words.slice(from, to).map((w) => w.toString(16));
  if (bestStart === 0 && (bestLen === 6 || (bestLen === 5 && words[5] === 0xffff))) {
    const low = ((words[6] ?? 0) * 65536 + (words[7] ?? 0)) >>> 0;
    return `::${bestLen === 5 ? 'ffff:' : ''}${formatIpv4(low)}`;
  }
  if (bestStart < 0) return hex(0, 8).join(':');
  return `${hex(0, bestStart).join(':')}::${hex(bestStart + bestLen, 8).join(':')}`;
}

/** `parsed`'s address with the bits after the first `kept` cleared, written canonically. */
function maskedAddress(parsed: ParsedCidr, kept: number): string {
  if (parsed.family === 4) {
    const size = 2 ** (32 - kept);
    const value = parseIpv4(parsed.address) ?? 0;
    return formatIpv4(value - (value % size));
  }
  return formatIpv6(
    ipv6Groups(parsed.address).map((group, i) => {
      const bits = Math.min(16, Math.max(0, kept - i * 16));
      return group & ((0xffff << (16 - bits)) & 0xffff);
    }),
  );
}

/**
 * The network a CIDR names, written canonically: its address with the host
 * bits cleared, IPv6 as formatIpv6 writes it (`10.20.0.0/16` for
 * `10.20.0.1/16`, `fd00:20::/48` for `FD00:20::1/48`); undefined if `text`
 * isn't a CIDR.
 */
export function cidrNetwork(text: string): string | undefined {
  const parsed = parseCidr(text);
  return parsed ? `${maskedAddress(parsed, parsed.prefix)}/${parsed.prefix}` : undefined;
}

/**
 * True when `text` is a CIDR with host bits set (`10.20.0.1/16`): it names
 * an address in a network, not the network, so it is refused where a route
 * is expected (docs/protocol.md "Routes"), as Tailscale does.
 */
export function hasHostBits(text: string): boolean {
  const parsed = parseCidr(text);
  return parsed !== undefined && maskedAddress(parsed, parsed.prefix) !== maskedAddress(parsed, parsed.family === 4 ? 32 : 128);
}

/**
 * The network `text` names as a route (a CIDR without host bits, written
 * canonically), or why it names none: what the agent's `--advertise-routes`
 * and `ctl devices approve-routes` say before any request, as the server
 * would refuse it.
 */
export function routePrefix(text: string): { network: string } | { problem: string } {
  const network = cidrNetwork(text);
  if (network === undefined) return { problem: `${JSON.stringify(text)} is not a CIDR (e.g. 10.20.0.0/16)` };
  if (hasHostBits(text)) return { problem: `${text} has host bits set; expected ${network}` };
  return { network };
}
