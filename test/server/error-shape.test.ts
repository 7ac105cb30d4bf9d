/**
 * Issue 12, "One error shape everywhere": every error response, including
 * those Fastify or Node's HTTP parser produce before a route runs, carries
 * `{"error": {"code", "message"}}` with a catalog code and its status.
 */
import { connect } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { ERRORS, ROUTES, isErrorCode, paths, type ErrorCode, type Organization } from '../../src/protocol/index.js';
import { useServer, type InjectResponse } from './fixtures.js';

/** The status and code of an error response, or why it isn't one in the catalog's shape. */
function shapeOf(status: number, body: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return `${status} not JSON: ${body.slice(0, 120)}`;
  }
  const error = (parsed as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  if (typeof error !== 'object' || error === null || !isErrorCode(error.code) || typeof error.message !== 'string') {
    return `${status} not the error shape: ${body.slice(0, 120)}`;
  }
  const code: ErrorCode = error.code;
  if (ERRORS[code].status !== status) return `${status} with ${code}, whose status is ${ERRORS[code].status}`;
  return `${status} ${code}`;
}

const shape = (res: InjectResponse): string => shapeOf(res.statusCode, res.body);

/** Sends `request` as raw bytes and reads the whole answer (the server closes the connection). */
function rawExchange(port: number, request: string): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(request));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), headers: head.toLowerCase(), body });
    });
    socket.setTimeout(5_000, () => socket.destroy(new Error('no answer in time')));
  });
}

describe('one error shape everywhere (PGlite)', () => {
  const h = useServer('pglite');
  let org: Organization;
  let port: number;

  beforeAll(async () => {
    org = await h().createOrg();
    await h().server.app.listen({ host: '127.0.0.1', port: 0 });
    const address = h().server.app.server.address();
    port = typeof address === 'object' && address !== null ? address.port : 0;
  });

  // Fix: Fastify's frameworkErrors go through the error handler.
  it('a malformed URL escape is 400 bad_request', async () => {
    for (const url of ['/api/organizations/%ZZ', '/api/organizations/%FF', `/api/organizations/${org.id}/devices/%E0%A4%A`]) {
      const res = await h().call('GET', url, { token: h().admin });
      expect(shape(res), url).toBe('400 bad_request');
    }
  });

  it('a path parameter longer than the router takes is 400 bad_request', async () => {
    const res = await h().call('GET', paths.organization('x'.repeat(500)), { token: h().admin });
    expect(shape(res)).toBe('400 bad_request');
  });

  // Fix: the only body parser is JSON's, and FST_ERR_CTP_INVALID_MEDIA_TYPE maps to unsupported_media_type.
  it('a body that is not application/json is 415 unsupported_media_type', async () => {
    const cases: [string, string | undefined, string][] = [
      ['POST', 'text/plain', '{"name":"x"}'],
      ['POST', 'application/x-www-form-urlencoded', 'name=x'],
      ['POST', 'application/xml', '<name>x</name>'],
      ['POST', 'multipart/form-data; boundary=x', '--x--'],
      ['PATCH', 'text/plain; charset=utf-8', '{"description":"x"}'],
    ];
    for (const [method, type, payload] of cases) {
      const url = method === 'POST' ? paths.organizations() : paths.organization(org.id);
      const res = await h().call(method as 'POST' | 'PATCH', url, { token: h().admin, payload, headers: type ? { 'content-type': type } : {} });
      expect(shape(res), `${method} ${type}`).toBe('415 unsupported_media_type');
    }
    // A body without any Content-Type.
    const bare = await h().server.app.inject({ method: 'POST', url: paths.organizations(), headers: { authorization: `Bearer ${h().admin}` }, payload: '{"name":"x"}' });
    expect(shape(bare)).toBe('415 unsupported_media_type');
  });

  it('application/json with parameters is JSON', async () => {
    const res = await h().call('PATCH', paths.organization(org.id), { token: h().admin, payload: '{"description":"utf8"}', headers: { 'content-type': 'application/json; charset=utf-8' } });
    expect(res.statusCode, res.body).toBe(200);
  });

  // Held before issue 12 too; kept so that OPTIONS stays in the shape whatever answers it.
  it('OPTIONS on any route is 404 not_found in the error shape', async () => {
    for (const route of Object.values(ROUTES)) {
      const url = route.replace(':org', org.id).replace(':id', org.id).replace(':method', 'ping');
      const res = await h().server.app.inject({ method: 'OPTIONS', url, headers: { authorization: `Bearer ${h().admin}`, origin: 'https://example.com', 'access-control-request-method': 'POST' } });
      expect(shape(res), url).toBe('404 not_found');
    }
  });

  // Fix: clientErrorHandler answers for Node's HTTP parser.
  it('oversized headers are 431 headers_too_large with the error body', async () => {
    const res = await rawExchange(port, `GET ${ROUTES.organizations} HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(32 * 1024)}\r\n\r\n`);
    expect(shapeOf(res.status, res.body)).toBe('431 headers_too_large');
    expect(res.headers).toContain('content-type: application/json');
  });

  it('malformed HTTP is 400 bad_request with the error body', async () => {
    for (const request of ['NOT HTTP AT ALL\r\n\r\n', `GET ${ROUTES.organizations} HTTP/1.1\r\nbad header line\r\n\r\n`]) {
      const res = await rawExchange(port, request);
      expect(shapeOf(res.status, res.body), JSON.stringify(request)).toBe('400 bad_request');
    }
  });

  it('over a real connection, the other cases keep the shape too', async () => {
    const auth = `authorization: Bearer ${h().admin}\r\n`;
    const cases: [string, string][] = [
      [`GET /api/organizations/%ZZ HTTP/1.1\r\nhost: x\r\n${auth}connection: close\r\n\r\n`, '400 bad_request'],
      [`OPTIONS ${ROUTES.organizations} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`, '404 not_found'],
      [`OPTIONS * HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`, '404 not_found'],
      [`POST ${ROUTES.organizations} HTTP/1.1\r\nhost: x\r\n${auth}content-type: text/plain\r\ncontent-length: 2\r\nconnection: close\r\n\r\nhi`, '415 unsupported_media_type'],
    ];
    for (const [request, expected] of cases) {
      const res = await rawExchange(port, request);
      expect(shapeOf(res.status, res.body), request.split('\r\n')[0]).toBe(expected);
    }
  });
});
