/**
 * IP address arithmetic for the dataplane: canonical text forms (the ones
 * `wg show` and `ip -j` print, so desired and current state compare as
 * strings), and address intervals for firewall sets.
 */
import { cidrNetwork, formatIpv4, formatIpv6, ipv6Groups, isEndpointAddress, isIpv6, parseCidr, parseIpv4, type IpFamily } from '../../protocol/wire.js';

export interface IpValue {
  family: IpFamily;
  value: bigint;
}

/** An inclusive address interval of one family. */
export interface IpInterval {
  family: IpFamily;
  start: bigint;
  end: bigint;
}

const BITS: Record<IpFamily, number> = { 4: 32, 6: 128 };

export function parseIp(text: string): IpValue | undefined {
  const v4 = parseIpv4(text);
  if (v4 !== undefined) return { family: 4, value: BigInt(v4) };
  if (!isIpv6(text)) return undefined;
  let value = 0n;
  for (const word of ipv6Groups(text)) value = (value << 16n) | BigInt(word);
  return { family: 6, value };
}

/** Canonical text: as glibc's inet_ntop writes it (what `wg` and `ip` print; see formatIpv6). */
export function formatIp(ip: IpValue): string {
  if (ip.family === 4) return formatIpv4(Number(ip.value));
  const words: number[] = [];
  for (let i = 7; i >= 0; i--) words.push(Number((ip.value >> BigInt(i * 16)) & 0xffffn));
  return formatIpv6(words);
}

function mask(family: IpFamily, prefix: number): bigint {
  const bits = BigInt(BITS[family]);
  const host = bits - BigInt(prefix);
  return ((1n << bits) - 1n) ^ ((1n << host) - 1n);
}

/** `addr/prefix` with host bits cleared, in canonical text; undefined if invalid. */
export function canonicalCidr(text: string): string | undefined {
  return cidrNetwork(text);
}

/** The host route for an address: `a.b.c.d/32` or `…/128`. */
export function hostCidr(text: string): string | undefined {
  const ip = parseIp(text);
  return ip ? `${formatIp(ip)}/${BITS[ip.family]}` : undefined;
}

export function canonicalIp(text: string): string | undefined {
  const ip = parseIp(text);
  return ip ? formatIp(ip) : undefined;
}

/** `ip:port` / `[v6]:port` in the form `wg show dump` prints; undefined if invalid. */
export function canonicalEndpoint(text: string): string | undefined {
  if (!isEndpointAddress(text)) return undefined;
  const colon = text.lastIndexOf(':');
  const host = text.slice(0, colon).replace(/^\[|\]$/g, '');
  const ip = parseIp(host);
  if (!ip) return undefined;
  const port = Number(text.slice(colon + 1));
  return ip.family === 4 ? `${formatIp(ip)}:${port}` : `[${formatIp(ip)}]:${port}`;
}

/** `CIDR`, `IP` or `IP-IP` (same family, start ≤ end) as an interval; undefined if invalid. */
export function rangeToInterval(text: string): IpInterval | undefined {
  if (text.includes('/')) {
    const parsed = parseCidr(text);
    const ip = parsed ? parseIp(parsed.address) : undefined;
    if (!parsed || !ip) return undefined;
    const m = mask(ip.family, parsed.prefix);
    const start = ip.value & m;
    const all = (1n << BigInt(BITS[ip.family])) - 1n;
    return { family: ip.family, start, end: start | (all ^ m) };
  }
  const dash = text.indexOf('-');
  if (dash < 0) {
    const ip = parseIp(text);
    return ip ? { family: ip.family, start: ip.value, end: ip.value } : undefined;
  }
  const a = parseIp(text.slice(0, dash));
  const b = parseIp(text.slice(dash + 1));
  if (!a || !b || a.family !== b.family || a.value > b.value) return undefined;
  return { family: a.family, start: a.value, end: b.value };
}

/** Sorted, with overlapping and adjacent intervals of one family joined. */
export function mergeIntervals(intervals: readonly IpInterval[]): IpInterval[] {
  const sorted = [...intervals].sort((x, y) =>
    x.family !== y.family ? x.family - y.family : x.start < y.start ? -1 : x.start > y.start ? 1 : 0,
  );
  const out: IpInterval[] = [];
  for (const iv of sorted) {
    const last = out[out.length - 1];
    if (last && last.family === iv.family && iv.start <= last.end + 1n) {
      if (iv.end > last.end) last.end = iv.end;
    } else {
      out.push({ ...iv });
    }
  }
  return out;
}

/** The shortest nftables set element for an interval: `ip`, `cidr` or `ip-ip`. */
export function formatInterval(iv: IpInterval): string {
  const start = formatIp({ family: iv.family, value: iv.start });
  if (iv.start === iv.end) return start;
  const size = iv.end - iv.start + 1n;
  const isPowerOfTwo = (size & (size - 1n)) === 0n;
  if (isPowerOfTwo && iv.start % size === 0n) {
    const prefix = BITS[iv.family] - (size.toString(2).length - 1);
    return `${start}/${prefix}`;
  }
  return `${start}-${formatIp({ family: iv.family, value: iv.end })}`;
}

/** Orders CIDRs by family, then address, then prefix length; invalid text sorts last, by text. */
export function compareCidrs(a: string, b: string): number {
  const x = rangeToInterval(a);
  const y = rangeToInterval(b);
  if (!x || !y) return x ? -1 : y ? 1 : a < b ? -1 : a > b ? 1 : 0;
  if (x.family !== y.family) return x.family - y.family;
  if (x.start !== y.start) return x.start < y.start ? -1 : 1;
  const px = parseCidr(a)?.prefix ?? BITS[x.family];
  const py = parseCidr(b)?.prefix ?? BITS[y.family];
  return px - py;
}

/** Whether CIDR `outer` holds every address of CIDR `inner` (equal ones included); false for invalid text. */
export function cidrContains(outer: string, inner: string): boolean {
  const o = rangeToInterval(outer);
  const i = rangeToInterval(inner);
  return o !== undefined && i !== undefined && o.family === i.family && o.start <= i.start && i.end <= o.end;
}
