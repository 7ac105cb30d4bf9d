/**
 * Issue 36, part 4a: a client that half-closes its connection once it sent a
 * whole request (`shutdown(SHUT_WR)`, `socket.end()`) still gets its
 * answer. Before the fix node:http closed the connection at the client's end
 * of input, before the answer: a valid write got no response at all (on
 * PostgreSQL every time; on PGlite whenever the request waited on a timer,
 * as a device's status does for its batch).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEADERS, MEDIA, paths, QUERY, type Organization } from '../../../src/protocol/index.js';
import { startServer, type FleetServer, type Settings } from '../../../src/server/index.js';
import { createDatabase } from '../../support/postgres-server.js';
import { requireBinary, which } from '../../support/binaries.js';
import { issueServerCert, makeTestCa } from '../../support/test-ca.js';
import { backends, Harness, pgAdminUrl, uniqueName, wgKey } from '../fixtures.js';
import { RawConnection, requestHead, type RawResponse } from '../support/raw-connection.js';
import { eventually } from '../../gateway/support.js';
import { scratchDir } from '../../support/scratch-dir.js';

/** Writes a whole request with a JSON body, ends the client's side at once, and reads the answer. */
async function halfClosed(url: string, method: string, path: string, token: string, body: unknown, tls?: { ca: string }): Promise<RawResponse> {
  const json = JSON.stringify(body);
  const c = await RawConnection.open(url, tls ? { tls } : {});
  try {
    c.write(requestHead(method, path, { [HEADERS.authorization]: `Bearer ${token}`, [HEADERS.contentType]: MEDIA.json, [HEADERS.contentLength]: Buffer.byteLength(json) }) + json);
    c.socket.end();
    const res = await c.response();
    // The server closes its side too once it answered: nothing else can come.
    await c.closed;
    return res;
  } finally {
    c.destroy();
  }
}

const status = (revision: number): Record<string, unknown> => ({ applied_revision: revision, apply_error: null, local_endpoints: [], os: 'linux', agent_version: 'test' });

/** `grace`: the grace case too; its 5 s wait doesn't depend on the storage or TLS, so one listener runs it. */
function cases(serve: () => { server: FleetServer; tls?: { ca: string } }, grace: boolean): void {
  // Fix: listener-options.ts sets node:http's httpAllowHalfOpen (and node:https's allowHalfOpen).
  it('POST, PATCH and a device status PUT sent then half-closed get their whole answer', async () => {
    const { server, tls } = serve();
    const url = server.url ?? '';
    const h = new Harness(server);
    const created = await halfClosed(url, 'POST', paths.organizations(), h.admin, { name: uniqueName('half') }, tls);
    expect(created.status, created.body).toBe(201);
    const org = JSON.parse(created.body) as Organization;

    const patched = await halfClosed(url, 'PATCH', paths.organization(org.id), h.admin, { description: 'after a half-close' }, tls);
    expect(patched.status, patched.body).toBe(200);
    expect(JSON.parse(patched.body)).toMatchObject({ description: 'after a half-close' });

    const device = await h.createDevice(org.id, { public_key: wgKey() });
    const reported = await halfClosed(url, 'PUT', paths.deviceStatus(org.id, device.id), device.device_token, status(await h.head(org.id)), tls);
    expect(reported.status, reported.body).toBe(200);
  });

  if (!grace) return;
  // Decision: a client gone altogether looks the same as one that half-closed, so a long wait is given up after a grace (listener-options.ts).
  it('a half-closed request still unanswered after the grace loses its connection, and its wait is given up', async () => {
    const { server, tls } = serve();
    const h = new Harness(server);
    const org = await h.createOrg();
    const absent = await h.createDevice(org.id, { public_key: wgKey() });
    const json = '{}';
    const c = await RawConnection.open(server.url ?? '', tls ? { tls } : {});
    try {
      c.write(
        requestHead('POST', `${paths.deviceRpc(org.id, absent.id, 'ping')}?${QUERY.wait}=60`, {
          [HEADERS.authorization]: `Bearer ${h.admin}`,
          [HEADERS.contentType]: MEDIA.json,
          [HEADERS.contentLength]: json.length,
        }) + json,
      );
      await eventually('the call is parked', () => server.gateway.stats().parked === 1);
      c.socket.end();
      // The call would wait 60 s for its device: the connection closes long before.
      await Promise.race([c.closed, new Promise((_, reject) => setTimeout(() => reject(new Error('still open after 30 s')), 30_000))]);
      expect(c.receivedBytes).toBe(0);
      await eventually('no parked call', () => server.gateway.stats().parked === 0);
    } finally {
      c.destroy();
    }
  });
}

function start(overrides: Partial<Settings>): Promise<FleetServer> {
  return startServer({ logLevel: 'silent', host: '127.0.0.1', port: 0, ...overrides }, { listen: true });
}

describe.each(backends())('half-closed requests on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    let server: FleetServer;
    beforeAll(async () => {
      server = await start(name === 'pglite' ? { memory: true } : { databaseUrl: await createDatabase(pgAdminUrl()) });
    });
    afterAll(async () => {
      await server?.close();
    });
    cases(() => ({ server }), name === 'pglite');
  });
});

describe.skipIf(!requireBinary('openssl', which('openssl') !== undefined))('half-closed requests over TLS (PGlite)', () => {
  let server: FleetServer;
  let tls: { ca: string };
  beforeAll(async () => {
    const ca = makeTestCa(scratchDir('fleetplane-half-close'));
    const cert = issueServerCert(ca, 'server');
    tls = { ca: ca.pem };
    server = await start({ memory: true, tlsCert: cert.certFile, tlsKey: cert.keyFile });
  });
  afterAll(async () => {
    await server?.close();
  });
  cases(() => ({ server, tls }), false);
});
