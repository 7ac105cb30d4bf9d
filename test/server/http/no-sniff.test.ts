/**
 * Issue 36, part 4a: `X-Content-Type-Options: nosniff` on every response,
 * the API's JSON included (only the dashboard had it), set in one place
 * (no-sniff.ts; raw-error-response.ts for what is answered before a request
 * exists).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEADERS, paths, ROUTES } from '../../../src/protocol/index.js';
import { startServer, type FleetServer } from '../../../src/server/index.js';
import { RawConnection, requestHead, type RawResponse } from '../support/raw-connection.js';

describe('X-Content-Type-Options: nosniff (PGlite)', () => {
  let server: FleetServer;
  let url: string;
  let admin: string;

  beforeAll(async () => {
    server = await startServer({ logLevel: 'silent', memory: true, host: '127.0.0.1', port: 0 }, { listen: true });
    url = server.url ?? '';
    admin = server.adminToken.token ?? '';
  });
  afterAll(async () => {
    await server.close();
  });

  async function raw(text: string): Promise<RawResponse> {
    const c = await RawConnection.open(url);
    try {
      c.write(text);
      return await c.response();
    } finally {
      c.destroy();
    }
  }

  const get = (path: string, token?: string): Promise<RawResponse> =>
    raw(requestHead('GET', path, { ...(token ? { [HEADERS.authorization]: `Bearer ${token}` } : {}), [HEADERS.connection]: 'close' }));

  // Fix: no-sniff.ts sets it on every reply of the app; raw-error-response.ts on the raw ones.
  it.each([
    ['a JSON route', () => get(paths.organizations(), admin), 200],
    ['an error (401)', () => get(paths.organizations()), 401],
    ['an unknown route (404)', () => get('/api/no-such-route', admin), 404],
    ['/healthz', () => get(ROUTES.healthz), 200],
    ['a malformed URL escape (Fastify framework error)', () => get('/api/organizations/%zz', admin), 400],
    ['malformed HTTP (answered before any request exists)', () => raw('NOT HTTP\r\n\r\n'), 400],
  ] as const)('%s', async (_what, send, status) => {
    const res = await send();
    expect(res.status, res.body).toBe(status);
    expect(res.headers[HEADERS.contentTypeOptions]).toBe('nosniff');
  });
});
