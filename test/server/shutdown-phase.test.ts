import { once } from 'node:events';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paths, type EnrolledDevice } from '../../src/protocol/index.js';
import { startServer, type FleetServer } from '../../src/server/index.js';
import { Harness, startTestServer } from './fixtures.js';

const STATUS = { applied_revision: 1, apply_error: null, local_endpoints: [], os: 'linux', agent_version: 'test' };

/**
 * docs/protocol.md "Operational endpoints", shutdown: while draining, requests
 * on open connections are served with `Connection: close`; the last status
 * batch is written once no connection is left.
 */
describe('requests while the server shuts down', () => {
  let server: FleetServer;
  let h: Harness;
  let org: string;
  let device: EnrolledDevice;
  beforeAll(async () => {
    server = await startTestServer('pglite');
    h = new Harness(server);
    org = (await h.createOrg()).id;
    device = await h.createDevice(org);
  });
  afterAll(async () => {
    await server.close();
  });

  function draining(on: boolean): void {
    server.ctx.draining = () => on;
  }

  it('draining: a status PUT is recorded and answered, with Connection: close', async () => {
    draining(true);
    const res = await h.call('PUT', paths.deviceStatus(org, device.id), { token: device.device_token, body: STATUS });
    expect(res.statusCode).toBe(200);
    expect(res.headers['connection']).toBe('close');
    draining(false);
    const read = await h.call('GET', paths.device(org, device.id), { token: h.admin });
    expect(read.json()).toMatchObject({ status: { applied_revision: 1 } });
  });

  it('close() answers a request on a connection opened before it, then writes the last status batch', async () => {
    const other = await startServer({ logLevel: 'silent', memory: true, host: '127.0.0.1', port: 0 }, { listen: true });
    const oh = new Harness(other);
    const otherOrg = (await oh.createOrg()).id;
    const otherDevice = await oh.createDevice(otherOrg);
    const batcherClose = other.fleet.close.bind(other.fleet);
    let connectionsAtLastBatch: number | undefined;
    other.fleet.close = async () => {
      connectionsAtLastBatch = await new Promise<number>((resolve, reject) =>
        other.app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))),
      );
      return batcherClose();
    };
    // A connection a client opened before the shutdown (a spare one), whose first request comes during it.
    const url = new URL(other.url ?? '');
    const socket = connect(Number(url.port), url.hostname);
    await once(socket, 'connect');
    expect(other.ctx.draining()).toBe(false);
    const closing = other.close();
    expect(other.ctx.draining()).toBe(true);
    // Past every step of the drain that does not wait for the HTTP connections.
    await sleep(100);
    const body = JSON.stringify({ ...STATUS, applied_revision: 3 });
    socket.write(
      `PUT ${paths.deviceStatus(otherOrg, otherDevice.id)} HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${otherDevice.device_token}\r\n` +
        `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    await once(socket, 'end');
    await closing;
    const head = Buffer.concat(chunks).toString().split('\r\n\r\n')[0] ?? '';
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    expect(head.toLowerCase()).toContain('connection: close');
    expect(connectionsAtLastBatch).toBe(0);
  });

  it('open: no Connection: close', async () => {
    const res = await h.call('GET', paths.device(org, device.id), { token: h.admin });
    expect(res.statusCode).toBe(200);
    expect(res.headers['connection']).not.toBe('close');
  });
});
