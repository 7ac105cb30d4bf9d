/**
 * Issue 36, part 4b: a query string whose percent-encoding is not UTF-8
 * (`?object=%ED%B0%80`, an encoded lone surrogate) got 200 with an empty
 * list: the parser kept the raw text and the filter matched nothing. Every
 * route now answers 400 `bad_request`, as for an invalid UTF-8 body, after
 * authentication.
 */
import { describe, expect, it } from 'vitest';
import { paths, QUERY } from '../../../src/protocol/index.js';
import { parseQueryString } from '../../../src/server/http/query-string.js';
import { errorCode, useServer } from '../fixtures.js';

describe('query strings that are not percent-encoded UTF-8 (PGlite)', () => {
  const h = useServer('pglite');

  // Fix: query-string.ts parses strictly, and a preValidation hook refuses what did not decode.
  it.each([
    ['an encoded lone surrogate', '%ED%B0%80'],
    ['a truncated sequence', '%E2%82'],
    ['a byte that starts no UTF-8 sequence', '%FF'],
    ['an escape without two hex digits', '%zz'],
  ])('%s in the audit filter is 400 bad_request', async (_what, value) => {
    const s = h();
    const org = await s.createOrg();
    const res = await s.call('GET', `${paths.orgAudit(org.id)}?${QUERY.object}=${value}`, { token: s.admin });
    expect(res.statusCode, res.body).toBe(400);
    expect(errorCode(res)).toBe('bad_request');
  });

  it('so it is on every route, in any parameter (a name too), and after authentication', async () => {
    const s = h();
    for (const query of ['x=%ED%B0%80', '%ED%B0%80=1', `${QUERY.watch}=%FF`]) {
      const res = await s.call('GET', `${paths.organizations()}?${query}`, { token: s.admin });
      expect(res.statusCode, query).toBe(400);
      expect(errorCode(res)).toBe('bad_request');
    }
    expect((await s.call('GET', `${paths.audit()}?${QUERY.object}=%ED%B0%80`, { token: s.admin })).statusCode).toBe(400);
    const anonymous = await s.call('GET', `${paths.organizations()}?x=%ED%B0%80`);
    expect(anonymous.statusCode).toBe(401);
  });

  it('valid UTF-8 escapes and plain values are read as before', async () => {
    const s = h();
    const org = await s.createOrg();
    const res = await s.call('GET', `${paths.orgAudit(org.id)}?${QUERY.object}=${encodeURIComponent(org.id)}`, { token: s.admin });
    expect(res.statusCode, res.body).toBe(200);
    expect(parseQueryString('a=%C3%A9t%C3%A9&b=x+y&a=2&c&&d=e=f')).toEqual({ a: ['été', '2'], b: 'x y', c: '', d: 'e=f' });
  });
});
