import { ipv4Pool, ipFamily, isEndpointAddress, isIpRange, parseCidr } from './ip.js';

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:Z|[+-](\d{2}):(\d{2}))$/i;
/** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z: the years RFC 3339 can write. */
const FIRST_INSTANT = -62_135_596_800_000;
const LAST_INSTANT = 253_402_300_799_999;

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/**
 * An RFC 3339 date-time that names a real instant. `Date.parse` rolls
 * 2024-02-30 over to March and takes year 0000; PostgreSQL refuses both, so
 * accepting them would fail the write instead of the request.
 */
function isDateTime(s: string): boolean {
  const m = DATE_TIME.exec(s);
  if (!m) return false;
  const n = (group: number) => Number(m[group] ?? 0);
  const [year, month, day] = [n(1), n(2), n(3)];
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return false;
  if (n(4) > 23 || n(5) > 59 || n(6) > 59 || n(7) > 23 || n(8) > 59) return false;
  const instant = Date.parse(s);
  return instant >= FIRST_INSTANT && instant <= LAST_INSTANT;
}

/**
 * String formats used by the resource schemas. The server registers them with
 * its validator, so a value the schema accepts is a value the code can use.
 */
export const FORMATS = {
  uuid: (s: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(s),
  'date-time': isDateTime,
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
