/**
 * Issue 12, "Bad characters", between replicas: the private listener decodes
 * a forwarded body as strictly as the public listener (json-body.ts). Invalid
 * UTF-8 is 400 `bad_request` (not replaced by U+FFFD and passed on); a NUL,
 * an unpaired surrogate, a non-finite number or nesting past the limit is
 * 400 `validation_failed`; each in the catalog's `{error: {code, message}}` shape.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateKey, signPrivateToken } from '../../src/server/access/index.js';
import { startServer, type FleetServer } from '../../src/server/index.js';
import { HEADERS, MEDIA, bearerAuthorization, paths } from '../../src/protocol/index.js';

const SECRET = 'private-listener-bodies-secret-0123456789';

describe('the private listener refuses the bodies the public one refuses', () => {
  let server: FleetServer;
  let base: string;

  beforeAll(async () => {
    server = await startServer(
      { memory: true, logLevel: 'silent', host: '127.0.0.1', port: 0, privatePort: 0, privateSecret: SECRET },
      { listen: true },
    );
    base = server.gateway.privateUrl ?? '';
    expect(base).toMatch(/^http:\/\//);
  });
  afterAll(async () => {
    await server?.close();
  });

  async function post(body: string | Uint8Array<ArrayBuffer>): Promise<{ status: number; body: unknown }> {
    const device = randomUUID();
    const res = await fetch(`${base}${paths.privateAgentRpc(device, 'ping')}`, {
      method: 'POST',
      headers: {
        [HEADERS.authorization]: bearerAuthorization(await signPrivateToken(privateKey(SECRET), 'test-replica', { deviceId: device, method: 'ping', deadlineMs: 1_000 })),
        [HEADERS.contentType]: MEDIA.json,
      },
      body,
    });
    return { status: res.status, body: await res.json() };
  }

  const DEEP = `${'{"a":'.repeat(100)}1${'}'.repeat(100)}`;
  const CASES: [string, string | Uint8Array<ArrayBuffer>, number, string, string | undefined][] = [
    ['invalid UTF-8', new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), 400, 'bad_request', undefined],
    ['a NUL in a value', '{"note": "a\\u0000b"}', 400, 'validation_failed', '/note'],
    ['an unpaired high surrogate', '{"note": "x\\ud800"}', 400, 'validation_failed', '/note'],
    ['an unpaired low surrogate in a key', '{"n": {"\\udc00": 1}}', 400, 'validation_failed', '/n'],
    ['a non-finite number', '{"wait": 1e400}', 400, 'validation_failed', '/wait'],
    ['nesting past the limit', DEEP, 400, 'validation_failed', undefined],
  ];

  // Fix: private-listener.ts decodes with a fatal UTF-8 decoder and checks the parsed body with findIllFormed.
  it.each(CASES)('%s is refused with a 400 in the error shape', async (_, body, status, code, path) => {
    const res = await post(body);
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject({ error: { code, message: expect.any(String) } });
    if (path !== undefined) expect(res.body).toMatchObject({ error: { details: { path } } });
  });

  it('a well-formed body with a surrogate pair and other escapes goes on to delivery', async () => {
    // No tunnel to this device here: 504, which is past the body checks.
    const res = await post('{"note": "\\ud83d\\ude00 \\u00e9\\t", "n": 1.5}');
    expect(res.status).toBe(504);
    expect(res.body).toMatchObject({ error: { code: 'agent_not_connected' } });
  });
});
