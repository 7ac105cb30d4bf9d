/**
 * Issue 36, part 3: slow clients can't lock anyone out. Measured before the
 * fix: 300 connections sending one header line every 2 s held all 128
 * connection slots of a server (`ulimit -n 256`) for about 60 s (Node's
 * headers timeout, checked every 30 s), and every new client, `/healthz`
 * included, got 503 `too_many_connections`; with the defaults one address
 * could take every slot.
 *
 * Real listening servers: this is about sockets. The connection limit is
 * set small with the settings; loopback is one source per address, so the
 * slow clients, the health check and the operator all come from 127.0.0.1.
 */
import { metricSum } from '../support/server-metric.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { HEADERS, MEDIA, paths, ROUTES } from '../../../src/protocol/index.js';
import { startServer, type FleetServer, type Settings } from '../../../src/server/index.js';
import { defaultPerSourceLimit } from '../../../src/server/http/connection-limits.js';
import { eventually, Fleet } from '../../gateway/support.js';
import { requireBinary, which } from '../../support/binaries.js';
import { issueServerCert, makeTestCa } from '../../support/test-ca.js';
import { RawConnection, codeOf, requestHead, type RawResponse } from '../support/raw-connection.js';
import { scratchDir } from '../../support/scratch-dir.js';

const SLOW_CLIENTS = 300;
const MAX_CONNECTIONS = 64;
/** The issue's deadline for /healthz and an authenticated GET while the slow clients hold on. */
const ANSWER_DEADLINE_MS = 1_000;
/** How often each slow client sends one more header line. */
const TRICKLE_MS = 2_000;

function start(overrides: Partial<Settings>): Promise<FleetServer> {
  return startServer({ logLevel: 'silent', memory: true, host: '127.0.0.1', port: 0, ...overrides }, { listen: true });
}


/** `work` within `ms`, or a rejection naming `what`. */
async function within<T>(ms: number, what: string, work: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)));
  try {
    return await Promise.race([work(), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** One request on a new connection from 127.0.0.1, and its answer. */
async function ask(url: string, head: string, tls?: { ca: string }): Promise<RawResponse> {
  const c = await RawConnection.open(url, { localAddress: '127.0.0.1', ...(tls ? { tls } : {}) });
  try {
    c.write(head);
    return await c.response();
  } finally {
    c.destroy();
  }
}

/**
 * Clients that send a request line and then one header line every
 * TRICKLE_MS, never finishing their headers. Resolves once the server has
 * taken in every one of them (held, refused, or closed to make room).
 */
async function slowClients(server: FleetServer, n: number, tls?: { ca: string }): Promise<{ clients: RawConnection[]; stop(): void }> {
  const url = server.url ?? '';
  const counted = async (): Promise<number> =>
    (await metricSum(server, 'fleetplane_connections_open', { listener: 'api' })) +
    (await metricSum(server, 'fleetplane_connections_evicted_total')) +
    (await metricSum(server, 'fleetplane_connections_refused_total'));
  const before = await counted();
  const clients: RawConnection[] = [];
  const tricklers: NodeJS.Timeout[] = [];
  // Over TLS a slow client need not even finish its handshake: it holds the TCP connection all the same.
  for (let i = 0; i < n; i++) {
    const c = await RawConnection.open(url, { localAddress: '127.0.0.1' });
    clients.push(c);
    if (tls) continue;
    c.write(`GET ${ROUTES.healthz} HTTP/1.1\r\n`);
    let line = 0;
    tricklers.push(setInterval(() => c.write(`x-slow-${line++}: 1\r\n`), TRICKLE_MS));
  }
  await eventually(`the server took in all ${n} slow clients`, async () => (await counted()) - before >= n);
  return {
    clients,
    stop() {
      for (const t of tricklers) clearInterval(t);
      for (const c of clients) c.destroy();
    },
  };
}

/** An organization and a read token of it. */
interface Reader {
  org: string;
  reader: string;
}

/** A watch stream (a request being served for as long as it lives) on a raw connection, once its head arrived. */
async function openWatch(url: string, fleet: Reader, tls?: { ca: string }): Promise<RawConnection> {
  const body = JSON.stringify([{ kind: 'organization' }]);
  const c = await RawConnection.open(url, { localAddress: '127.0.0.1', ...(tls ? { tls } : {}) });
  c.write(
    requestHead('POST', paths.events(fleet.org), { [HEADERS.authorization]: `Bearer ${fleet.reader}`, [HEADERS.contentType]: MEDIA.json, [HEADERS.contentLength]: Buffer.byteLength(body) }) + body,
  );
  expect((await c.response()).status).toBe(200);
  return c;
}

/** An agent tunnel (a WebSocket: an upgraded connection) of an enrolled device. */
async function openTunnel(url: string, fleet: Fleet): Promise<{ ws: WebSocket; closed: () => boolean }> {
  const device = await fleet.enroll();
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${paths.agentTunnel()}`, { headers: { [HEADERS.authorization]: `Bearer ${device.token}` }, localAddress: '127.0.0.1' });
  let closed = false;
  ws.on('close', () => (closed = true));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  ws.on('error', () => undefined);
  return { ws, closed: () => closed };
}

describe.each([
  { limit: 'per-source (its default)', perSource: undefined },
  { limit: 'total (per-source off)', perSource: 0 },
])('$limit limit: 300 slow-header connections from one address (PGlite)', ({ perSource }) => {
  let server: FleetServer;
  let url: string;
  let admin: string;

  beforeAll(async () => {
    // A headers timeout far past the test: what lets the others in must be the limits themselves.
    server = await start({ maxConnections: MAX_CONNECTIONS, headersTimeout: 600, ...(perSource === undefined ? {} : { maxConnectionsPerSource: perSource }) });
    url = server.url ?? '';
    admin = server.adminToken.token ?? '';
  });
  afterAll(async () => {
    await server.close();
  });

  // Fix: connection-limits.ts closes the connection idle the longest (no request being served) to make room,
  // and never one that serves a request, a stream or a tunnel (idle-connections.ts).
  it('/healthz and an authenticated GET answer within 1 s; the watch stream and the agent tunnel opened before are kept', async () => {
    const fleet = await Fleet.create(url, admin);
    const tunnel = await openTunnel(url, fleet);
    const watch = await openWatch(url, fleet);
    const slow = await slowClients(server, SLOW_CLIENTS);
    try {
      expect(await metricSum(server, 'fleetplane_connections_evicted_total', { reason: perSource === 0 ? 'total' : 'per_source' })).toBeGreaterThan(0);

      const health = await within(ANSWER_DEADLINE_MS, '/healthz', () => ask(url, requestHead('GET', ROUTES.healthz, { [HEADERS.connection]: 'close' })));
      expect(health.status, health.body).toBe(200);
      const list = await within(ANSWER_DEADLINE_MS, 'GET /api/organizations', () =>
        ask(url, requestHead('GET', paths.organizations(), { [HEADERS.authorization]: `Bearer ${admin}`, [HEADERS.connection]: 'close' })),
      );
      expect(list.status, list.body).toBe(200);

      expect(watch.isClosed).toBe(false);
      expect(tunnel.closed()).toBe(false);
      // Slow clients still hold connections: the others got in beside them, not after them.
      expect(slow.clients.filter((c) => !c.isClosed).length).toBeGreaterThan(0);
    } finally {
      slow.stop();
      watch.destroy();
      tunnel.ws.terminate();
    }
  });
});

describe('connections serving requests are never closed to make room (PGlite)', () => {
  const MAX = 4;
  let server: FleetServer;
  let url: string;

  beforeAll(async () => {
    server = await start({ maxConnections: MAX, maxConnectionsPerSource: 0, headersTimeout: 600 });
    url = server.url ?? '';
  });
  afterAll(async () => {
    await server.close();
  });

  // Decision: a request, stream or tunnel being served is never cut for a newcomer; when every slot serves one, the newcomer is refused.
  it('with every connection serving a stream, a new one is refused 503 too_many_connections', async () => {
    const fleet = await Fleet.create(url, server.adminToken.token ?? '');
    const held: RawConnection[] = [];
    try {
      // Fleet.create's own connections idle in its pool: the watches take their places.
      for (let i = 0; i < MAX; i++) held.push(await openWatch(url, fleet));
      const over = await RawConnection.open(url);
      held.push(over);
      const res = await over.response();
      expect(res.status).toBe(503);
      expect(codeOf(res)).toBe('too_many_connections');
      expect(held.slice(0, MAX).every((c) => !c.isClosed)).toBe(true);
    } finally {
      for (const c of held) c.destroy();
    }
  });
});

describe('--headers-timeout (PGlite)', () => {
  let server: FleetServer;
  let url: string;

  beforeAll(async () => {
    server = await start({ headersTimeout: 0.5 });
    url = server.url ?? '';
  });
  afterAll(async () => {
    await server.close();
  });

  // Fix: listener-options.ts gives node:http the headers timeout and checks it every fifth of it (Node's default: 60 s, every 30 s).
  it('a connection trickling its headers gets 408 request_timeout and is closed once the timeout passes', async () => {
    const c = await RawConnection.open(url);
    try {
      c.write(`GET ${ROUTES.healthz} HTTP/1.1\r\n`);
      // A header line every 100 ms for at most 20 s: a bounded loop if the server never closes it.
      const [res, closedByServer] = await Promise.all([c.response(30_000), c.dribble(200, 100, 'x-slow: 1\r\n')]);
      expect(res.status).toBe(408);
      expect(codeOf(res)).toBe('request_timeout');
      expect(closedByServer).toBe(true);
    } finally {
      c.destroy();
    }
  });

  it('a connection that sends nothing is closed too', async () => {
    const c = await RawConnection.open(url);
    try {
      expect(codeOf(await c.response(30_000))).toBe('request_timeout');
      await c.closed;
    } finally {
      c.destroy();
    }
  });

  it('the per-source limit is three quarters of the total in force by default', () => {
    expect(server.ctx.connections.maxPerSource).toBe(defaultPerSourceLimit(server.ctx.connections.maxTotal));
    expect(defaultPerSourceLimit(30_000)).toBe(22_500);
    expect(defaultPerSourceLimit(1)).toBe(1);
  });
});

describe.skipIf(!requireBinary('openssl', which('openssl') !== undefined))('slow clients over TLS (PGlite)', () => {
  let server: FleetServer;
  let url: string;
  let tls: { ca: string };
  let certificate: { tlsCert: string; tlsKey: string };

  beforeAll(async () => {
    const dir = scratchDir('fleetplane-slow-tls');
    const ca = makeTestCa(dir);
    const cert = issueServerCert(ca, 'server');
    tls = { ca: ca.pem };
    certificate = { tlsCert: cert.certFile, tlsKey: cert.keyFile };
    server = await start({ maxConnections: 16, headersTimeout: 600, ...certificate });
    url = server.url ?? '';
  });
  afterAll(async () => {
    await server?.close();
  });

  // Fix: listener-options.ts bounds the handshake by the headers timeout too (Node's default: 120 s).
  it('a connection that never starts its handshake is closed once the headers timeout passes', async () => {
    const quick = await start({ headersTimeout: 0.5, ...certificate });
    const c = await RawConnection.open(quick.url ?? '');
    try {
      await Promise.race([c.closed, new Promise((_, reject) => setTimeout(() => reject(new Error('still open after 30 s')), 30_000))]);
      expect(c.receivedBytes).toBe(0);
    } finally {
      c.destroy();
      await quick.close();
    }
  });

  // Fix: with TLS the limiter finds a request's connection through the TLS socket's remote end (connection-limits.ts).
  it('connections that never finish their handshake make room for /healthz; a watch stream over TLS is kept', async () => {
    const watch = await openWatch(url, await injectedReader(server), tls);
    const slow = await slowClients(server, 60, tls);
    try {
      const health = await within(ANSWER_DEADLINE_MS, '/healthz over TLS', () => ask(url, requestHead('GET', ROUTES.healthz, { [HEADERS.connection]: 'close' }), tls));
      expect(health.status, health.body).toBe(200);
      expect(watch.isClosed).toBe(false);
    } finally {
      slow.stop();
      watch.destroy();
    }
  });
});

/** An organization and a read token, made in-process (the test CA is not trusted by fetch). */
async function injectedReader(server: FleetServer): Promise<Reader> {
  const admin = server.adminToken.token ?? '';
  const auth = { [HEADERS.authorization]: `Bearer ${admin}` };
  const org = (await server.app.inject({ method: 'POST', url: paths.organizations(), headers: auth, payload: { name: 'slow-tls' } })).json<{ id: string }>();
  const token = (await server.app.inject({ method: 'POST', url: paths.tokens(org.id), headers: auth, payload: { role: 'read' } })).json<{ token: string }>();
  return { org: org.id, reader: token.token };
}
