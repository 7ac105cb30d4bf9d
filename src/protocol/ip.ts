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
