/**
 * `http://` to a server that speaks HTTPS: the server closes the connection
 * without a word, and ctl and the agent say what happened and which URL to
 * use instead of a bare `fetch failed (other side closed)`.
 */
import { writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureEnrolled } from '../../src/agent/identity/enrollment.js';
import { StateDir } from '../../src/agent/index.js';
import { isTransient } from '../../src/agent/transient.js';
import { isPlainHttpToTls, noticingTls, PlainHttpToTlsError, speaksTls } from '../../src/util/plain-http-to-tls.js';
import { FakeFleetServer } from '../client/support/fake-fleet-server.js';
import { ctlRunner, freshConfigPath } from '../client/support/ctl-runner.js';
import { TEST_CERT, TEST_KEY } from '../client/support/tls-fixture.js';
import { tempDir, until } from '../agent/support/harness.js';

let tls: FakeFleetServer;
/** The TLS server's address, asked in plain HTTP. */
let plainUrl: string;
let port: number;
const ctl = ctlRunner(() => tls);

beforeAll(async () => {
  tls = await new FakeFleetServer({ tls: { cert: TEST_CERT, key: TEST_KEY } }).start();
  port = Number(new URL(tls.url).port);
  plainUrl = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  await tls.close();
});

/** A TCP server that closes every connection at once, without a word, as a TLS server does to plain HTTP; but speaks no TLS. */
async function hangingUp(): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('plain HTTP to a server that speaks HTTPS', () => {
  it('ctl says the server speaks HTTPS and which URL to use (exit 1)', async () => {
    const env = { FLEETPLANE_URL: plainUrl, FLEETPLANE_TOKEN: tls.token, FLEETPLANE_CONFIG: freshConfigPath() };
    const r = await ctl(['orgs', 'list'], { env });
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      `error: GET /api/organizations: the server at ${plainUrl} speaks HTTPS, not plain HTTP: use https://127.0.0.1:${port} (fetch failed) (network_error)\n`,
    );
  });

  it('ctl says so through --ca-file too (its own fetch reports "socket hang up")', async () => {
    const dir = await tempDir('fp-plain-tls-');
    try {
      await writeFile(join(dir.path, 'ca.pem'), TEST_CERT);
      const env = { FLEETPLANE_URL: plainUrl, FLEETPLANE_TOKEN: tls.token, FLEETPLANE_CONFIG: freshConfigPath() };
      const r = await ctl(['orgs', 'list', '--ca-file', join(dir.path, 'ca.pem')], { env });
      expect(r.code).toBe(1);
      expect(r.err).toContain(`speaks HTTPS, not plain HTTP: use https://127.0.0.1:${port}`);
    } finally {
      await dir.remove();
    }
  });

  it('noticingTls keeps the scheme default port in the URL it suggests, and the cause', async () => {
    const failing = (): Promise<Response> => Promise.reject(new TypeError('fetch failed', { cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) }));
    const err: unknown = await noticingTls(failing)(`${plainUrl}/api/organizations`, { method: 'GET' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlainHttpToTlsError);
    expect((err as PlainHttpToTlsError).httpsUrl).toBe(`https://127.0.0.1:${port}`);
    expect((err as Error).cause).toBeInstanceOf(TypeError);
  });

  it("leaves other failures alone: a server that hangs up but speaks no TLS, a refused connection, a reply, an https URL", async () => {
    const hanging = await hangingUp();
    try {
      const fetch = noticingTls((input, init) => globalThis.fetch(input, init));
      const hungUp: unknown = await fetch(`${hanging.url}/x`, { method: 'GET' }).catch((e: unknown) => e);
      expect(hungUp).toBeInstanceOf(TypeError);
      expect(isPlainHttpToTls(hungUp)).toBe(false);
      expect(await speaksTls('127.0.0.1', Number(new URL(hanging.url).port))).toBe(false);
    } finally {
      await hanging.close();
    }
    expect(await speaksTls('127.0.0.1', port)).toBe(true);
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const rejecting = noticingTls(() => Promise.reject(new TypeError('fetch failed', { cause: refused })));
    expect(isPlainHttpToTls(await rejecting(`${plainUrl}/x`, { method: 'GET' }).catch((e: unknown) => e))).toBe(false);
    const closed = new TypeError('fetch failed', { cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) });
    expect(await noticingTls(() => Promise.reject(closed))(`https://127.0.0.1:${port}/x`, { method: 'GET' }).catch((e: unknown) => e)).toBe(closed);
  });

  it('the agent retries enrolling with a warning that says so, not as a transient failure', async () => {
    const dir = await tempDir('fp-plain-tls-agent-');
    const lines: Array<{ level: number; msg: string; err?: { message?: string } }> = [];
    const stream = new Writable({
      write(chunk: Buffer | string, _enc, done) {
        for (const l of String(chunk).split('\n')) if (l !== '') lines.push(JSON.parse(l) as (typeof lines)[number]);
        done();
      },
    });
    const stop = new AbortController();
    try {
      const fetch = noticingTls((input, init) => globalThis.fetch(input, init));
      const enrolling = ensureEnrolled(
        { stateDir: new StateDir(join(dir.path, 'state')), server: plainUrl, org: tls.org, registrationKey: 'fpr_x', hostname: 'h', endpoints: [], logger: pino(stream), fetch },
        stop.signal,
      ).catch(() => undefined);
      const retry = await until(() => lines.find((l) => l.msg === 'enrollment failed; retrying'), 'a retry line');
      stop.abort();
      await enrolling;
      expect(retry.level).toBe(40);
      expect(retry.err?.message).toContain(`speaks HTTPS, not plain HTTP: use https://127.0.0.1:${port}`);
      expect(isTransient(new PlainHttpToTlsError(plainUrl, `https://127.0.0.1:${port}`, { cause: new Error('x') }))).toBe(false);
    } finally {
      await dir.remove();
    }
  });
});
