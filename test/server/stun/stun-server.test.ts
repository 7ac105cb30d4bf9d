import { createSocket, type Socket } from 'node:dgram';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decodeStunMessage, encodeBindingRequest, readMappedAddress, type StunAddress } from '../../../src/protocol/index.js';
import { startServer, type FleetServer } from '../../../src/server/index.js';
import { StunMetrics, startStunServer, StunStartError, type StunServer } from '../../../src/server/stun/index.js';
import { buildDist } from '../../support/fleetplane-process.js';
import { serve } from '../support/serve-process.js';

const silent = pino({ level: 'silent' });
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function udpClient(): Promise<Socket> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  return socket;
}

/** Sends one Binding request from `socket` to 127.0.0.1:port and reads the mapped address of the answer. */
function ask(socket: Socket, port: number): Promise<StunAddress> {
  const tid = randomBytes(12);
  return new Promise<StunAddress>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no STUN answer from port ${port}`)), 5_000);
    const onMessage = (msg: Buffer): void => {
      const m = decodeStunMessage(msg);
      if (!m || !Buffer.from(m.transactionId).equals(tid)) return;
      clearTimeout(timer);
      socket.off('message', onMessage);
      const mapped = readMappedAddress(m);
      if (mapped) resolve(mapped);
      else reject(new Error('answer without a mapped address'));
    };
    socket.on('message', onMessage);
    socket.send(encodeBindingRequest(tid), port, '127.0.0.1');
  });
}

async function counted(registry: Registry): Promise<Record<string, number>> {
  const metric = await registry.getSingleMetric('fleetplane_stun_requests_total')?.get();
  return Object.fromEntries((metric?.values ?? []).map((v) => [`${String(v.labels['port'])}/${String(v.labels['result'])}`, v.value]));
}

async function responder(port = 0, altPort = 0): Promise<{ server: StunServer; registry: Registry }> {
  const registry = new Registry();
  const server = await startStunServer({ host: '127.0.0.1', port, altPort, metrics: new StunMetrics(registry), logger: silent });
  cleanups.push(() => server.close());
  return { server, registry };
}

describe('the STUN responder over UDP on 127.0.0.1', () => {
  it('answers Binding requests on both ports with the address the request came from, and counts them', async () => {
    const { server, registry } = await responder();
    expect(server.port).toBeGreaterThan(0);
    expect(server.altPort).toBeGreaterThan(0);
    expect(server.altPort).not.toBe(server.port);
    const client = await udpClient();
    const expected = { family: 4, address: '127.0.0.1', port: client.address().port };
    expect(await ask(client, server.port)).toEqual(expected);
    expect(await ask(client, server.altPort)).toEqual(expected);
    expect(await counted(registry)).toMatchObject({ 'primary/answered': 1, 'alternate/answered': 1 });
  });

  it('ignores garbage and keeps answering', async () => {
    const { server, registry } = await responder();
    const client = await udpClient();
    for (const junk of [Buffer.alloc(0), Buffer.from('hello'), randomBytes(20), randomBytes(1400)]) client.send(junk, server.port, '127.0.0.1');
    expect((await ask(client, server.port)).port).toBe(client.address().port);
    await expect.poll(async () => (await counted(registry))['primary/ignored']).toBe(4);
  });

  it('a port in use fails the start with one line naming the setting, and releases the port it had bound', async () => {
    const taken = await udpClient();
    const busy = taken.address().port;
    const err = await startStunServer({ host: '127.0.0.1', port: 0, altPort: busy, metrics: new StunMetrics(new Registry()), logger: silent }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StunStartError);
    expect((err as Error).message).toBe(`--stun-alt-port ${busy} (UDP): bind EADDRINUSE 127.0.0.1:${busy}`);
    const primaryErr = await startStunServer({ host: '127.0.0.1', port: busy, altPort: 0, metrics: new StunMetrics(new Registry()), logger: silent }).catch((e: unknown) => e);
    expect((primaryErr as Error).message).toMatch(/^--stun-port \d+ \(UDP\): bind EADDRINUSE/);
  });

  it('close() releases both ports', async () => {
    const { server } = await responder();
    await server.close();
    const again = await responder(server.port, server.altPort);
    expect([again.server.port, again.server.altPort]).toEqual([server.port, server.altPort]);
  });
});

describe('the STUN responder in the server', () => {
  let server: FleetServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('runs by default with the HTTP listener (the suite sets its ports to 0), is counted in its metrics, and stops with close()', async () => {
    server = await startServer({ memory: true, logLevel: 'silent', host: '127.0.0.1', port: 0 });
    const stun = server.stun;
    expect(stun).toBeDefined();
    const client = await udpClient();
    expect((await ask(client, stun!.port)).port).toBe(client.address().port);
    const text = await server.ctx.metrics.registry.metrics();
    expect(text).toMatch(/^fleetplane_stun_requests_total\{port="primary",result="answered"\} 1$/m);
    await server.close();
    server = undefined;
    await expect(ask(client, stun!.port)).rejects.toThrow(/no STUN answer/);
  }, 30_000);

  it('is off with stun: false, and without a listener (`listen: false`)', async () => {
    server = await startServer({ memory: true, logLevel: 'silent', host: '127.0.0.1', port: 0, stun: false });
    expect(server.stun).toBeUndefined();
    await server.close();
    server = await startServer({ memory: true, logLevel: 'silent' }, { listen: false });
    expect(server.stun).toBeUndefined();
  }, 30_000);
});

describe('fleetplane serve with its STUN port in use', () => {
  beforeAll(buildDist, 120_000);

  it('exits 1 with one line naming the port', async () => {
    const taken = await udpClient();
    const busy = taken.address().port;
    const p = serve(['--memory', '--host', '127.0.0.1', '--port', '0', '--stun-port', String(busy)]);
    const exit = await p.exit;
    expect(exit.code).toBe(1);
    expect(exit.stderr).toMatch(new RegExp(`^fleetplane: --stun-port ${busy} \\(UDP\\): bind EADDRINUSE 127\\.0\\.0\\.1:${busy}\\n$`, 'm'));
    expect(exit.stdout).not.toContain('listening');
  }, 120_000);
});
