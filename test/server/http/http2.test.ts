/**
 * Issue 37, "Tabs share": where the server speaks TLS it also speaks HTTP/2,
 * so a browser's tabs share one connection instead of six per origin. Over
 * it, long-lived streams are HTTP/2 streams that go through the stream owner
 * like any other, and HTTP/1.1 clients (agents, `ctl`, WebSockets) keep
 * working on the same port.
 */
import { constants } from 'node:http2';
import { get as httpsGet } from 'node:https';
import { pino, type Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEADERS, MEDIA, paths } from '../../../src/protocol/index.js';
import { startServer, type FleetServer, type Settings } from '../../../src/server/index.js';
import { requireBinary, which } from '../../support/binaries.js';
import { issueServerCert, makeTestCa } from '../../support/test-ca.js';
import { eventually } from '../../gateway/support.js';
import { Harness } from '../fixtures.js';
import { RawConnection } from '../support/raw-connection.js';
import { metricSum } from '../support/server-metric.js';
import { H2Client, type H2LineStream } from '../support/h2-client.js';
import { bigGroupSpec } from '../../watch/support/objects.js';
import { scratchDir } from '../../support/scratch-dir.js';

const PAGE = { watches: [{ kind: 'device' }, { kind: 'security-group' }], convergence: true, statuses: true };

let tls: { certFile: string; keyFile: string } | undefined;
let caPem = '';

function start(overrides: Partial<Settings>, logger?: Logger): Promise<FleetServer> {
  // One CA and certificate for the file's servers: each is three openssl runs.
  if (!tls) {
    const ca = makeTestCa(scratchDir('fleetplane-h2'));
    tls = issueServerCert(ca, 'server');
    caPem = ca.pem;
  }
  return startServer({ logLevel: 'silent', host: '127.0.0.1', port: 0, memory: true, tlsCert: tls.certFile, tlsKey: tls.keyFile, ...overrides }, { listen: true, ...(logger ? { logger } : {}) });
}

const hasGroup = (s: H2LineStream, id: string): boolean => s.of('change').some((l) => (l.value as { id?: string } | undefined)?.id === id);

const hasOpenssl = requireBinary('openssl', which('openssl') !== undefined);

// One server for the first two groups: what the slow stream needs it reads when that stream opens.
let server: FleetServer;
let h: Harness;
beforeAll(async () => {
  if (!hasOpenssl) return;
  server = await start({ maxConnectionsPerSource: 2 });
  h = new Harness(server);
});
afterAll(async () => {
  await server?.close();
});

describe.skipIf(!hasOpenssl)('HTTP/2 on the TLS listener', () => {
  it('a client offering h2 gets HTTP/2, one that does not gets HTTP/1.1 on the same port', async () => {
    const c = await H2Client.connect(server.url ?? '', caPem);
    try {
      expect(c.protocol).toBe('h2');
      const created = await c.request('POST', paths.organizations(), h.admin, { name: 'over-h2' });
      expect(created.status, created.body).toBe(201);
      const org = JSON.parse(created.body) as { id: string };
      const listed = await c.request('GET', paths.organization(org.id), h.admin);
      expect(listed.status).toBe(200);
      expect(listed.headers[HEADERS.contentTypeOptions]).toBe('nosniff');
      // HTTP/2 has no Connection header: a reply that would close an HTTP/1.1 connection (a 401) doesn't try to
      // set one (node:http2 would drop it with a warning on the process), and the connection still serves.
      const warnings: string[] = [];
      const onWarning = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
      process.on('warning', onWarning);
      try {
        const refused = await c.request('GET', paths.organization(org.id), 'not-a-token');
        expect(refused.status).toBe(401);
        await new Promise((resolve) => setImmediate(resolve));
      } finally {
        process.off('warning', onWarning);
      }
      expect(warnings).toEqual([]);
      expect((await c.request('GET', paths.organization(org.id), h.admin)).status).toBe(200);
    } finally {
      c.close();
    }
    const version = await new Promise<string>((resolve, reject) => {
      httpsGet(`${server.url ?? ''}/healthz`, { ca: caPem }, (res) => {
        res.resume();
        resolve(res.httpVersion);
      }).once('error', reject);
    });
    expect(version).toBe('1.1');
  });

  it('twelve page streams and a watch stream share one connection; a write on it answers and every stream sees it', async () => {
    const org = (await h.createOrg()).id;
    const c = await H2Client.connect(server.url ?? '', caPem);
    const watchesBefore = server.streams.count('watch');
    try {
      const pages = await Promise.all(Array.from({ length: 12 }, () => c.lines('POST', paths.page(org), h.admin, PAGE)));
      const events = await c.lines('POST', paths.events(org), h.admin, [{ kind: 'security-group' }]);
      for (const s of [...pages, events]) {
        expect(s.status).toBe(200);
        expect(s.headers[HEADERS.contentType]).toBe(MEDIA.watch);
      }
      // One stream each in the stream owner, all on one TCP connection.
      expect(server.streams.count('watch') - watchesBefore).toBe(13);
      expect(await metricSum(server, 'fleetplane_http2_sessions')).toBe(1);
      await eventually('every page has its list, convergence and statuses', () =>
        pages.every((p) => p.of('tail').length === 2 && p.of('convergence').length > 0 && p.of('statuses').length > 0),
      );

      const created = await c.request('POST', paths.securityGroups(org), h.admin, { name: 'web' });
      expect(created.status, created.body).toBe(201);
      const group = JSON.parse(created.body) as { id: string };
      await eventually('every stream has the new group', () => [...pages, events].every((s) => hasGroup(s, group.id)));
      // The body is the stream's lines and nothing else: no HTTP/1.1 chunk framing leaks into it.
      for (const s of [...pages, events]) expect(s.raw.split('\n').filter((l) => l !== '').every((l) => l.startsWith('{'))).toBe(true);

      // A tab that closes cuts its stream alone: the owner lets it go, and the others go on.
      pages[0]!.cancel();
      await eventually('the cut stream is released', () => server.streams.count('watch') - watchesBefore === 12);
      const renamed = await c.request('PATCH', paths.securityGroup(org, group.id), h.admin, { description: 'after a tab closed' });
      expect(renamed.status, renamed.body).toBe(200);
      await eventually('the streams left see the change', () =>
        [...pages.slice(1), events].every((s) => s.of('change').filter((l) => (l.value as { id?: string }).id === group.id).length === 2),
      );
    } finally {
      c.close();
    }
    await eventually('closing the connection ends its streams', () => server.streams.count('watch') === watchesBefore);
  });

  // Decision: an HTTP/2 connection is served while any of its streams is: never the idle one closed to make room.
  it('at the per-source limit, an idle connection makes room, never the HTTP/2 connection carrying a stream', async () => {
    const org = (await h.createOrg()).id;
    const c = await H2Client.connect(server.url ?? '', caPem);
    let idle: RawConnection | undefined;
    let third: RawConnection | undefined;
    try {
      const events = await c.lines('POST', paths.events(org), h.admin, [{ kind: 'security-group' }]);
      expect(events.status).toBe(200);
      idle = await RawConnection.open(server.url ?? '', { tls: { ca: caPem } });
      // The limit is 2 from this address: the third takes the place of the idle one, the oldest that is idle.
      third = await RawConnection.open(server.url ?? '', { tls: { ca: caPem } });
      await idle.closed;
      const group = await h.createGroup(org, { name: 'after-the-limit' });
      await eventually('the HTTP/2 stream is still served', () => hasGroup(events, group.id));
    } finally {
      idle?.destroy();
      third?.destroy();
      c.close();
    }
  });
});

describe.skipIf(!hasOpenssl)('a slow HTTP/2 stream', () => {
  // Decision: a stream over its bound is cut alone (RST_STREAM), as an HTTP/1.1 one loses its connection.
  it('is bounded like any stream: cut alone for slow_consumer, and the connection goes on', async () => {
    const org = (await h.createOrg()).id;
    // One event of about 340 KB: far more than HTTP/2's flow-control window and the stream's buffer limit together.
    await h.ok(201, 'POST', paths.securityGroups(org), { body: bigGroupSpec(0) });
    const c = await H2Client.connect(server.url ?? '', caPem);
    const closesBefore = await metricSum(server, 'fleetplane_watch_slow_consumer_closes_total');
    const settings = server.ctx.settings;
    const { watchBufferLimit, slowConsumerTimeout } = settings;
    try {
      // Read when a stream opens: only the stalled stream gets the small bound and the short timeout.
      Object.assign(settings, { watchBufferLimit: 16_384, slowConsumerTimeout: 0.5 });
      const stalled = await c.lines('POST', paths.events(org), h.admin, [{ kind: 'security-group' }]).finally(() =>
        Object.assign(settings, { watchBufferLimit, slowConsumerTimeout }),
      );
      // The client stops reading: once HTTP/2's flow-control window is full, what is written waits in the server.
      stalled.stream.pause();
      const closed = new Promise<number>((resolve) => stalled.stream.once('close', () => resolve(stalled.stream.rstCode ?? -1)));
      expect(await closed).toBe(constants.NGHTTP2_CANCEL);
      expect(await metricSum(server, 'fleetplane_watch_slow_consumer_closes_total')).toBe(closesBefore + 1);

      const other = (await h.createOrg()).id;
      const live = await c.lines('POST', paths.events(other), h.admin, [{ kind: 'security-group' }]);
      const group = await h.createGroup(other, { name: 'after-the-cut' });
      await eventually('the connection carries another stream', () => hasGroup(live, group.id));
    } finally {
      c.close();
    }
  });
});

describe.skipIf(!hasOpenssl)('stopping a server with HTTP/2 streams open', () => {
  it('every stream on the connection gets its unavailable line and ends; the connection closes', async () => {
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
    const server = await start({}, logger);
    const h = new Harness(server);
    const c = await H2Client.connect(server.url ?? '', caPem);
    try {
      const org = (await h.createOrg()).id;
      const streams = await Promise.all(Array.from({ length: 3 }, () => c.lines('POST', paths.page(org), h.admin, PAGE)));
      await eventually('each stream has its list', () => streams.every((s) => s.of('tail').length === 2));
      const closed = new Promise<void>((resolve) => c.session.once('close', () => resolve()));
      await server.close();
      await Promise.all(streams.map((s) => s.ended));
      for (const s of streams) expect(s.lines.at(-1)).toMatchObject({ type: 'error', value: { code: 'unavailable' } });
      await closed;
      // The stream owner saw each stream close: nothing was left for the end of the grace to cut.
      expect(warnings.filter((w) => w.includes('still open after the shutdown grace'))).toEqual([]);
    } finally {
      c.close();
    }
  });
});
