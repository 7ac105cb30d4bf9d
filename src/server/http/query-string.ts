import { ApiError } from '../errors.js';
import type { App } from './app.js';

/** A parsed query string: one value per name, or the values of a repeated name in order. */
export type ParsedQuery = Record<string, string | string[]>;

/** Query strings whose percent-encoding is not UTF-8, as parsed: refused once the caller is authorized. */
const malformed = new WeakSet<ParsedQuery>();

const PLUS = /\+/g;

function decode(part: string): string | undefined {
  if (!part.includes('%') && !part.includes('+')) return part;
  try {
    return decodeURIComponent(part.replace(PLUS, ' '));
  } catch {
    return undefined;
  }
}

/**
 * Parses a query string as Fastify's default parser does (`&`-separated,
 * `+` is a space, a repeated name gives an array, a name without `=` an
 * empty value), but decodes strictly: an escape that is not `%` and two hex
 * digits, or bytes that are not UTF-8 (an encoded surrogate such as
 * `%ED%B0%80` included), makes the whole query malformed. The default
 * parser kept such a value as its raw text, so a filter silently matched
 * nothing.
 */
export function parseQueryString(query: string): ParsedQuery {
  const out: ParsedQuery = Object.create(null) as ParsedQuery;
  let bad = false;
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = decode(eq < 0 ? pair : pair.slice(0, eq));
    const value = decode(eq < 0 ? '' : pair.slice(eq + 1));
    if (name === undefined || value === undefined) {
      bad = true;
      continue;
    }
    const seen = out[name];
    if (seen === undefined) out[name] = value;
    else if (Array.isArray(seen)) seen.push(value);
    else out[name] = [seen, value];
  }
  if (bad) malformed.add(out);
  return out;
}

/** Fastify's router option for every route's query string. */
export const strictQueryStrings = { querystringParser: parseQueryString };

/**
 * Every route refuses a malformed query string (parseQueryString) with 400
 * `bad_request`, as an invalid UTF-8 body is: after authentication and
 * authorization, with the validation of the rest of the request.
 */
export function refuseMalformedQueries(app: App): void {
  app.addHook('preValidation', async (req) => {
    if (malformed.has(req.query as ParsedQuery)) throw new ApiError('bad_request', 'the query string is not valid percent-encoded UTF-8');
  });
}
