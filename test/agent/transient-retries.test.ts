/**
 * Retries of transient failures log one info line each (message and code,
 * no stack trace); anything unexpected stays a warning with the whole error.
 */
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { isTransient, logRetry } from '../../src/agent/transient.js';
import { ensureEnrolled } from '../../src/agent/identity/enrollment.js';
import { StateDir } from '../../src/agent/index.js';
import { TunnelHandshakeError } from '../../src/agent/tunnel/index.js';
import { ProtocolError, TransportError, UnavailableError } from '../../src/client/index.js';
import { requireBinary, which } from '../support/binaries.js';
import { issueServerCert, makeTestCa } from '../support/test-ca.js';
import { agentOptions, orgWithKey, runAgent, startListeningServer, tempDir, until } from './support/harness.js';
import { freePort } from '../support/postgres-server.js';

const hasOpenssl = requireBinary('openssl', which('openssl') !== undefined);

interface Line {
  level: number;
  msg: string;
  err?: unknown;
  hint?: string;
  error?: string;
  code?: string;
  status?: number;
  component?: string;
}

function capture(level: pino.Level = 'info'): { logger: Logger; lines: Line[]; raw: () => string } {
  const lines: Line[] = [];
  let raw = '';
  const stream = new Writable({
    write(chunk: Buffer | string, _enc, done) {
      raw += String(chunk);
      for (const l of String(chunk).split('\n')) if (l !== '') lines.push(JSON.parse(l) as Line);
      done();
    },
  });
  return { logger: pino({ level }, stream), lines, raw: () => raw };
}

function refused(): TransportError {
  const socket = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
  return new TransportError({ code: 'network_error', message: 'POST /api/x: fetch failed', cause: new TypeError('fetch failed', { cause: socket }) });
}

describe('logRetry', () => {
  it('logs a transient failure as one info line with its message and code, without a stack', () => {
    const c = capture();
    logRetry(c.logger, refused(), { delayMs: 1000 }, 'enrollment failed; retrying');
    logRetry(c.logger, new UnavailableError({ code: 'unavailable', message: 'shutting down', status: 503 }), {}, 'status report failed; retrying');
    logRetry(c.logger, new TunnelHandshakeError(503, 1000), {}, 'tunnel connection failed; retrying');
    expect(c.lines).toEqual([
      { level: 30, time: expect.any(Number), pid: process.pid, hostname: expect.any(String), msg: 'enrollment failed; retrying', delayMs: 1000, error: expect.stringContaining('ECONNREFUSED'), code: 'ECONNREFUSED' },
      expect.objectContaining({ level: 30, error: 'shutting down', code: 'unavailable', status: 503 }),
      expect.objectContaining({ level: 30, error: 'the server refused the tunnel with HTTP 503', status: 503 }),
    ]);
    expect(c.raw()).not.toMatch(/"err"|stack|\n\s+at /);
    expect(c.raw().trim().split('\n')).toHaveLength(3);
  });

  it('keeps the whole error, at warn, for what is not transient', () => {
    const c = capture();
    const tlsRefused = new TypeError('fetch failed', { cause: Object.assign(new Error('self-signed certificate in certificate chain'), { code: 'SELF_SIGNED_CERT_IN_CHAIN' }) });
    for (const err of [new ProtocolError({ code: 'invalid_response', message: 'not JSON' }), tlsRefused, new TunnelHandshakeError(400)]) {
      expect(isTransient(err)).toBe(false);
      logRetry(c.logger, err, {}, 'retrying');
    }
    expect(c.lines.map((l) => l.level)).toEqual([40, 40, 40]);
    for (const l of c.lines) expect(l.err).toMatchObject({ stack: expect.any(String) });
    expect(c.lines.map((l) => l.hint)).toEqual([undefined, expect.stringContaining('--ca-file'), undefined]);
  });

  it('says to pass --ca-file when the server certificate is untrusted, even as the SDK reports it (a network_error)', () => {
    const c = capture();
    const tls = Object.assign(new Error('unable to verify the first certificate'), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
    const err = new TransportError({ code: 'network_error', message: 'POST /api/x: fetch failed', cause: new TypeError('fetch failed', { cause: tls }) });
    expect(isTransient(err)).toBe(false);
    logRetry(c.logger, err, {}, 'enrollment failed; retrying');
    expect(c.lines).toEqual([
      expect.objectContaining({
        level: 40,
        err: expect.objectContaining({ stack: expect.any(String) }),
        hint: "the server's certificate is not signed by a CA trusted here: pass its CA with --ca-file (or FLEETPLANE_AGENT_CA_FILE)",
      }),
    ]);
  });
});

describe.skipIf(!hasOpenssl)('the agent, against a server whose certificate it does not trust', () => {
  it('enrollment logs that it failed with a hint to pass --ca-file, and keeps trying', async () => {
    const dir = await tempDir('fp-transient-tls-');
    const ca = makeTestCa(dir.path);
    const cert = issueServerCert(ca, 'untrusted');
    const server = createHttpsServer({ cert: cert.cert, key: cert.key }, (_req, res) => res.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const c = capture();
    const stop = new AbortController();
    try {
      const stateDir = new StateDir(join(dir.path, 'state'));
      const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const enrolling = ensureEnrolled({ stateDir, server: url, org: undefined, registrationKey: 'fpr_x', hostname: 'h', endpoints: [], logger: c.logger }, stop.signal).catch(() => undefined);
      const retry = await until(() => c.lines.find((l) => l.msg === 'enrollment failed; retrying'), 'a retry line');
      stop.abort();
      await enrolling;
      expect(retry).toMatchObject({ level: 40, hint: expect.stringContaining('pass its CA with --ca-file') });
      expect(JSON.stringify(retry.err)).toMatch(/unable to verify the first certificate/);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await dir.remove();
    }
  });
});

describe('the agent, when its server goes away', () => {
  it('enrollment retries against a closed port: info lines, no stack trace', async () => {
    const dir = await tempDir('fp-transient-enroll-');
    const c = capture();
    const stop = new AbortController();
    try {
      const enrolling = ensureEnrolled(
        { stateDir: new StateDir(dir.path), server: `http://127.0.0.1:${await freePort()}`, org: undefined, registrationKey: 'fpr_x', hostname: 'h', endpoints: [], logger: c.logger },
        stop.signal,
      ).catch(() => undefined);
      await until(() => c.lines.some((l) => l.msg === 'enrollment failed; retrying'), 'a retry line');
      stop.abort();
      await enrolling;
      const retry = c.lines.find((l) => l.msg === 'enrollment failed; retrying');
      expect(retry).toMatchObject({ level: 30, code: 'ECONNREFUSED', error: expect.stringMatching(/fetch failed \(connect ECONNREFUSED 127\.0\.0\.1:\d+\)$/) });
      expect(retry?.err).toBeUndefined();
    } finally {
      await dir.remove();
    }
  });

  it('the watch, the tunnel and the status reports retry with one info line each', async () => {
    const { server, url, admin } = await startListeningServer();
    const dir = await tempDir('fp-transient-');
    const c = capture('debug');
    let agent: Awaited<ReturnType<typeof runAgent>> | undefined;
    try {
      const { org, key } = await orgWithKey(admin, 'transient');
      agent = await runAgent(agentOptions({ server: url, org, registrationKey: key, stateDir: dir.path, statusIntervalMs: 200 }), { logger: c.logger });
      await until(() => c.lines.some((l) => l.msg === 'watch synced') && c.lines.some((l) => l.msg === 'tunnel connected'), 'the agent running');
      await server.close();
      const wanted = ['watch stream interrupted; resuming', 'tunnel connection failed; retrying', 'status report failed; retrying'];
      await until(() => wanted.every((m) => c.lines.some((l) => l.msg === m)), `retry lines for ${wanted.join(', ')}`, 30_000);
      const retries = c.lines.filter((l) => /retrying|resuming|trying again/.test(l.msg));
      expect(retries.filter((l) => l.level !== 30 || l.err !== undefined)).toEqual([]);
      for (const l of retries) expect(l.error, l.msg).toEqual(expect.any(String));
    } finally {
      await agent?.stop();
      await server.close();
      await dir.remove();
    }
  }, 90_000);
});
