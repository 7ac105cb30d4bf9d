/**
 * Issue 12, "Hostile or slow clients": `--max-connections` (all listeners
 * together) and `--max-connections-per-source` (the public listener). A
 * connection past a limit, when every connection in its scope serves a
 * request (here a watch stream), is written a 503 `too_many_connections`
 * with `Retry-After` and closed before anything it sent is read; closing
 * connections makes room again. (Idle connections make room for new ones
 * instead: http/slow-headers.test.ts.) Loopback is one source per address,
 * so the per-source case uses 127.0.0.1 and 127.0.0.2 as two sources.
 */
import { writeFileSync } from 'node:fs';
import { metricSum } from './support/server-metric.js';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEADERS, MEDIA, paths } from '../../src/protocol/index.js';
import { startServer, type FleetServer, type Settings } from '../../src/server/index.js';
import { REFUSED_RETRY_AFTER_S, connectionCeiling } from '../../src/server/http/connection-limits.js';
import { openFilesLimit } from '../../src/util/open-files-limit.js';
import { RawConnection, codeOf, requestHead } from './support/raw-connection.js';
import { requireBinary, which } from '../support/binaries.js';
import { issueServerCert, makeTestCa } from '../support/test-ca.js';
import { scratchDir } from '../support/scratch-dir.js';


/** Polls until the server counts `n` open connections (it counts a close when its socket's close event runs). */
async function openCount(server: FleetServer, n: number): Promise<void> {
  for (let i = 0; i < 2_000; i++) {
    if ((await metricSum(server, 'fleetplane_connections_open')) === n) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`the server never counted ${n} open connections (it counts ${await metricSum(server, 'fleetplane_connections_open')})`);
}

/** What a connection past a limit gets without sending anything: 503 `too_many_connections` with Retry-After, then the close. */
async function expectRefused(c: RawConnection): Promise<void> {
  const res = await c.response();
  expect(res.status).toBe(503);
  expect(codeOf(res)).toBe('too_many_connections');
  expect(res.headers[HEADERS.retryAfter]).toBe(String(REFUSED_RETRY_AFTER_S));
  expect(res.headers[HEADERS.connection]).toBe('close');
  await c.closed;
}

/** A connection serving a request for as long as it lives (an organization's watch stream), once its head arrived. */
async function watching(server: FleetServer, url: string, opts: { localAddress?: string; tls?: { ca: string } } = {}): Promise<RawConnection> {
  const auth = { [HEADERS.authorization]: `Bearer ${server.adminToken.token ?? ''}` };
  const org = (await server.app.inject({ method: 'POST', url: paths.organizations(), headers: auth, payload: { name: `limits-${Math.random().toString(36).slice(2)}` } })).json<{ id: string }>();
  const body = JSON.stringify([{ kind: 'organization' }]);
  const c = await RawConnection.open(url, opts);
  c.write(requestHead('POST', paths.events(org.id), { ...auth, [HEADERS.contentType]: MEDIA.json, [HEADERS.contentLength]: Buffer.byteLength(body) }) + body);
  const res = await c.response();
  expect(res.status, res.body).toBe(200);
  return c;
}

/** Opens `n` connections, each serving a watch stream, into `held` (which the caller destroys). */
async function holdServing(server: FleetServer, held: RawConnection[], url: string, n: number, opts: { localAddress?: string } = {}): Promise<void> {
  for (let i = 0; i < n; i++) held.push(await watching(server, url, opts));
}

function start(overrides: Partial<Settings>): Promise<FleetServer> {
  return startServer({ logLevel: 'silent', memory: true, host: '127.0.0.1', port: 0, ...overrides }, { listen: true });
}

describe('--max-connections (PGlite)', () => {
  const MAX = 4;
  let server: FleetServer;
  let url: string;

  beforeAll(async () => {
    // The per-source limit off: one address (loopback) fills the total here.
    server = await start({ maxConnections: MAX, maxConnectionsPerSource: 0, privatePort: 0, privateSecret: 'connection-limit-test' });
    url = server.url ?? '';
  });
  afterAll(async () => {
    await server.close();
  });

  // Fix: ConnectionLimiter counts at the connection event and refuses past the total.
  it('the connection past the limit gets 503 too_many_connections with Retry-After and is closed; closing some makes room', async () => {
    const held: RawConnection[] = [];
    try {
      await holdServing(server, held, url, MAX);
      const over = await RawConnection.open(url);
      held.push(over);
      await expectRefused(over);
      expect(await metricSum(server, 'fleetplane_connections_refused_total', { listener: 'api', reason: 'total' })).toBe(1);
      // The ones already held are served as before.
      expect(held.slice(0, MAX).every((c) => !c.isClosed)).toBe(true);

      held.splice(0, 2).forEach((c) => c.destroy());
      await openCount(server, MAX - 2);
      await holdServing(server, held, url, 2);
      expect(await metricSum(server, 'fleetplane_connections_refused_total')).toBe(1);
    } finally {
      for (const c of held) c.destroy();
    }
    await openCount(server, 0);
  });

  // Decision: the private listener draws on the same descriptors, so it counts in the same total.
  it("the private listener's connections count in the same total", async () => {
    const privateUrl = server.gateway.privateUrl ?? '';
    expect(privateUrl).not.toBe('');
    const held: RawConnection[] = [];
    try {
      await holdServing(server, held, url, MAX - 1);
      // The private listener's connections are never closed to make room: one that sends nothing holds its slot.
      held.push(await RawConnection.open(privateUrl));
      await openCount(server, MAX);
      const overPrivate = await RawConnection.open(privateUrl);
      held.push(overPrivate);
      await expectRefused(overPrivate);
      const overApi = await RawConnection.open(url);
      held.push(overApi);
      await expectRefused(overApi);
      expect(await metricSum(server, 'fleetplane_connections_refused_total', { listener: 'private', reason: 'total' })).toBe(1);
    } finally {
      for (const c of held) c.destroy();
    }
    await openCount(server, 0);
  });
});

describe('--max-connections-per-source (PGlite)', () => {
  const PER_SOURCE = 3;
  let server: FleetServer;
  let url: string;

  beforeAll(async () => {
    server = await start({ maxConnectionsPerSource: PER_SOURCE });
    url = server.url ?? '';
  });
  afterAll(async () => {
    await server.close();
  });

  // Fix: ConnectionLimiter counts per remote address.
  it('one address past its limit is refused, another address (and /healthz from it) is served, and closing makes room', async () => {
    const held: RawConnection[] = [];
    try {
      await holdServing(server, held, url, PER_SOURCE, { localAddress: '127.0.0.1' });
      const over = await RawConnection.open(url, { localAddress: '127.0.0.1' });
      held.push(over);
      await expectRefused(over);
      expect(await metricSum(server, 'fleetplane_connections_refused_total', { listener: 'api', reason: 'per_source' })).toBe(1);

      await holdServing(server, held, url, 1, { localAddress: '127.0.0.2' });
      const other = await RawConnection.open(url, { localAddress: '127.0.0.2' });
      expect((await other.healthz()).status).toBe(200);
      other.destroy();

      held.shift()?.destroy();
      // Open now: two of 127.0.0.1's three, and 127.0.0.2's one.
      await openCount(server, PER_SOURCE);
      await holdServing(server, held, url, 1, { localAddress: '127.0.0.1' });
    } finally {
      for (const c of held) c.destroy();
    }
  });
});

describe.skipIf(!requireBinary('openssl', which('openssl') !== undefined))('--max-connections over TLS (PGlite)', () => {
  let server: FleetServer;
  let ca: string;

  beforeAll(async () => {
    const dir = scratchDir('fleetplane-limits-tls');
    const testCa = makeTestCa(dir);
    const cert = issueServerCert(testCa, 'server');
    ca = testCa.pem;
    server = await start({ maxConnections: 1, maxConnectionsPerSource: 0, tlsCert: cert.certFile, tlsKey: cert.keyFile });
  });
  afterAll(async () => {
    await server?.close();
  });

  const handshake = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const port = Number(new URL(server.url ?? '').port);
      const socket = tlsConnect({ host: '127.0.0.1', port, ca }, () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', reject);
    });

  // Decision: answering over TLS would cost the handshake the refusal is there to save.
  it('the connection past the limit is closed without an answer, and a handshake succeeds once there is room', async () => {
    const held = await watching(server, server.url ?? '', { tls: { ca } });
    const over = await RawConnection.open(server.url ?? '');
    try {
      await over.closed;
      expect(over.receivedBytes).toBe(0);
      expect(await metricSum(server, 'fleetplane_connections_refused_total', { listener: 'api', reason: 'total' })).toBe(1);
    } finally {
      held.destroy();
      over.destroy();
    }
    await openCount(server, 0);
    await handshake();
  });
});

describe('the total limit and the open-files limit', () => {
  it('keeps a reserve of descriptors below the open-files limit, and the setting when that is lower', () => {
    expect(connectionCeiling(30_000, 2_048)).toBe(2_048 - 205);
    expect(connectionCeiling(30_000, 1_048_576)).toBe(30_000);
    expect(connectionCeiling(30_000, 200)).toBe(72);
    expect(connectionCeiling(30_000, 100)).toBe(1);
    expect(connectionCeiling(30_000, undefined)).toBe(30_000);
  });

  it('reads the soft limit from /proc/self/limits, and nothing where there is no number', () => {
    const dir = scratchDir('fleetplane-limits');
    const file = (text: string): string => {
      const path = join(dir, `limits-${Math.random().toString(36).slice(2)}`);
      writeFileSync(path, text);
      return path;
    };
    const head = 'Limit                     Soft Limit           Hard Limit           Units     \n';
    expect(openFilesLimit(file(`${head}Max open files            2048                 4096                 files     \n`))).toBe(2048);
    expect(openFilesLimit(file(`${head}Max open files            unlimited            unlimited            files     \n`))).toBeUndefined();
    expect(openFilesLimit(join(dir, 'missing'))).toBeUndefined();
  });

  it('a server lowers --max-connections to what its open-files limit allows, and says so in its metrics', async () => {
    const limit = openFilesLimit();
    const server = await start({ maxConnections: 50_000_000 });
    try {
      expect(await metricSum(server, 'fleetplane_connections_limit')).toBe(connectionCeiling(50_000_000, limit));
      if (limit !== undefined) expect(await metricSum(server, 'fleetplane_connections_limit')).toBeLessThan(limit);
    } finally {
      await server.close();
    }
  });
});
