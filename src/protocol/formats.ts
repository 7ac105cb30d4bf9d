import { ipv4Pool, ipFamily, isEndpointAddress, isIpRange, parseCidr } from './ip.js';

/**
 * String formats used by the resource schemas. The server registers them with
 * its validator, so a value the schema accepts is a value the code can use.
 */
export const FORMATS = {
  uuid: (s: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(s),
  'date-time': (s: string) =>
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(s) && !Number.isNaN(Date.parse(s)),
  ip: (s: string) => ipFamily(s) !== undefined,
  cidr: (s: string) => parseCidr(s) !== undefined,
  'ipv4-pool': (s: string) => {
    const pool = ipv4Pool(s);
    return pool !== undefined && pool.prefix >= 8 && pool.prefix <= 30;
  },
  'ip-range': (s: string) => isIpRange(s),
  endpoint: (s: string) => isEndpointAddress(s),
  'wireguard-key': (s: string) => /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/.test(s),
} as const satisfies Record<string, (s: string) => boolean>;

export type FormatName = keyof typeof FORMATS;
