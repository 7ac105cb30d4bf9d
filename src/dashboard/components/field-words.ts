/**
 * The server's validation messages for a field, in words: the schema's
 * (`must match format "ip-range"`, `must be <= 65535`, a label's regular
 * expression) become what the field wants, with an example. A message not
 * recognized here is returned as the server wrote it.
 */

const PORT_RANGE = 'must be a port from 0 to 65535 (0 and 0: all ports)';
const LABEL = 'lowercase letters, digits and - (at most 63, not starting or ending with -)';

const FORMATS: Readonly<Record<string, string>> = {
  'ip-range': 'must be an IP range like 10.0.0.0/8, an address like 10.0.0.1, or 10.0.0.1-10.0.0.9',
  cidr: 'must be a CIDR like 10.0.0.0/8',
  ip: 'must be an IP address like 10.0.0.1',
  uuid: 'must be an id like 3f2b…-…',
  'date-time': 'must be a time like 2024-05-01T12:00:00Z',
  endpoint: 'must be an address and port like 198.51.100.7:51820',
};

/** What a `must match pattern "…"` asks for, from the shapes the protocol's patterns have. */
function patternWords(pattern: string): string | undefined {
  if (pattern.includes('(?:tag:|group:)')) return `must be tag:NAME or group:NAME, NAME being ${LABEL}`;
  if (pattern.startsWith('^tag:')) return `must be tag:NAME, NAME being ${LABEL}`;
  if (pattern.includes('[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?')) return `must be ${LABEL}`;
  return undefined;
}

/** `expected` (the server's `details.expected`, or its message without the path) at `path`, in words. */
export function inWords(path: string, expected: string): string {
  const port = /_port$/.test(path);
  const format = /^must match format "([^"]+)"$/.exec(expected);
  if (format?.[1] !== undefined) return FORMATS[format[1]] ?? expected;
  const pattern = /^must match pattern "(.*)"$/.exec(expected);
  if (pattern?.[1] !== undefined) return patternWords(pattern[1]) ?? expected;
  const bound = /^must be (<|>)=? (-?\d+)$/.exec(expected);
  if (bound?.[2] !== undefined) return port ? PORT_RANGE : `must be ${bound[1] === '<' ? 'at most' : 'at least'} ${bound[2]}`;
  if (expected === 'must be integer') return port ? PORT_RANGE : 'must be a whole number';
  const shorter = /^must NOT have more than (\d+) characters$/.exec(expected);
  if (shorter?.[1] !== undefined) return `must be at most ${shorter[1]} characters`;
  if (expected === 'must NOT have fewer than 1 characters') return 'must not be empty';
  return expected;
}
