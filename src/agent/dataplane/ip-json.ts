/**
 * Parsing the JSON that `ip -j addr show` and `ip -j route show` print,
 * keeping only what the Linux dataplane compares.
 */
import { canonicalCidr, canonicalIp, hostCidr } from './addresses.js';

export class IpJsonParseError extends Error {
  override name = 'IpJsonParseError';
}

export interface LinkState {
  mtu: number;
  up: boolean;
  /** Global-scope addresses as canonical `ip/prefix` (as `ip addr del` takes them). */
  addresses: string[];
}

export interface RouteState {
  destination: string;
  via: string | null;
}

function parseArray(text: string, what: string): unknown[] {
  if (text.trim() === '') return [];
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new IpJsonParseError(`${what}: not JSON`, { cause: error });
  }
  if (!Array.isArray(value)) throw new IpJsonParseError(`${what}: not a JSON array`);
  return value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One link from `ip -j addr show dev <name>`. */
export function parseAddrShow(text: string): LinkState {
  const [link] = parseArray(text, 'ip addr show');
  if (!isRecord(link) || typeof link['mtu'] !== 'number' || !Array.isArray(link['flags'])) {
    throw new IpJsonParseError('ip addr show: no link with mtu and flags');
  }
  const addresses: string[] = [];
  for (const info of Array.isArray(link['addr_info']) ? link['addr_info'] : []) {
    if (!isRecord(info) || info['scope'] !== 'global') continue;
    const local = info['local'];
    const prefix = info['prefixlen'];
    if (typeof local !== 'string' || typeof prefix !== 'number') throw new IpJsonParseError('ip addr show: bad addr_info');
    const ip = canonicalIp(local);
    if (ip === undefined) throw new IpJsonParseError(`ip addr show: bad address ${local}`);
    addresses.push(`${ip}/${prefix}`);
  }
  return { mtu: link['mtu'], up: link['flags'].includes('UP'), addresses };
}

/** Routes from `ip -j -4|-6 route show …`; `family` resolves `default`. */
export function parseRouteShow(text: string, family: 4 | 6): RouteState[] {
  return parseArray(text, 'ip route show').map((entry) => {
    if (!isRecord(entry) || typeof entry['dst'] !== 'string') throw new IpJsonParseError('ip route show: entry without dst');
    const dst = entry['dst'];
    const destination =
      dst === 'default' ? (family === 4 ? '0.0.0.0/0' : '::/0') : dst.includes('/') ? canonicalCidr(dst) : hostCidr(dst);
    if (destination === undefined) throw new IpJsonParseError(`ip route show: bad dst ${dst}`);
    const gateway = entry['gateway'];
    const via = typeof gateway === 'string' ? canonicalIp(gateway) ?? gateway : null;
    return { destination, via };
  });
}
