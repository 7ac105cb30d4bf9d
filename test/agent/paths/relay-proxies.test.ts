import { createSocket, type Socket } from 'node:dgram';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { RelayProxies } from '../../../src/agent/paths/index.js';
import { RELAY_KEY_BYTES } from '../../../src/protocol/index.js';
import { until } from '../support/harness.js';

/** Splits `key | (len, packet)+`. */
function records(message: Buffer): { key: string; packets: string[] } {
  const packets: string[] = [];
  let at = RELAY_KEY_BYTES;
  while (at < message.length) {
    const n = message.readUInt16BE(at);
    packets.push(message.subarray(at + 2, at + 2 + n).toString());
    at += 2 + n;
  }
  return { key: message.subarray(0, RELAY_KEY_BYTES).toString('base64'), packets };
}

describe('RelayProxies: one loopback socket per relayed peer between WireGuard and the relay', () => {
  const sockets: Socket[] = [];
  let proxies: RelayProxies | undefined;
  afterEach(() => {
    proxies?.close();
    for (const s of sockets.splice(0)) s.close();
  });

  async function fakeWireguard(): Promise<{ socket: Socket; port: number; got: { data: string; from: number }[] }> {
    const socket = createSocket('udp4');
    sockets.push(socket);
    const got: { data: string; from: number }[] = [];
    socket.on('message', (m, r) => got.push({ data: m.toString(), from: r.port }));
    await new Promise<void>((r) => socket.bind(0, '127.0.0.1', () => r()));
    return { socket, port: socket.address().port, got };
  }

  it('sends what WireGuard sends to a peer\'s socket as one message keyed by the peer, and hands the relay\'s packets to WireGuard from that socket', async () => {
    const wg = await fakeWireguard();
    const sent: Buffer[] = [];
    proxies = new RelayProxies({ wireguardPort: () => wg.port, send: (m) => (sent.push(Buffer.from(m)), true), logger: pino({ level: 'silent' }) });
    const peer = randomBytes(32).toString('base64');
    const endpoint = await proxies.endpointFor(peer);
    expect(endpoint).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(await proxies.endpointFor(peer)).toBe(endpoint);
    expect(proxies.isRelayEndpoint(endpoint)).toBe(true);
    expect(proxies.isRelayEndpoint('127.0.0.1:1')).toBe(false);
    const port = Number(endpoint.split(':')[1]);
    for (const p of ['one', 'two', 'three']) wg.socket.send(p, port, '127.0.0.1');
    await until(() => (sent.flatMap((m) => records(m).packets).length === 3 ? true : undefined), 'three packets relayed');
    expect(sent.every((m) => records(m).key === peer)).toBe(true);
    expect(sent.flatMap((m) => records(m).packets)).toEqual(['one', 'two', 'three']);

    const message = Buffer.concat([Buffer.from(peer, 'base64'), Buffer.from([0, 5]), Buffer.from('hello'), Buffer.from([0, 2]), Buffer.from('yo')]);
    proxies.deliver(message);
    await until(() => (wg.got.length === 2 ? true : undefined), 'two packets delivered to WireGuard');
    expect(wg.got).toEqual([{ data: 'hello', from: port }, { data: 'yo', from: port }]);
  });

  it('ignores packets from anything but WireGuard\'s port, drops packets for peers it doesn\'t relay, and closes the sockets of peers no longer retained', async () => {
    const wg = await fakeWireguard();
    const stranger = await fakeWireguard();
    const sent: Buffer[] = [];
    proxies = new RelayProxies({ wireguardPort: () => wg.port, send: (m) => (sent.push(m), true), logger: pino({ level: 'silent' }) });
    const peer = randomBytes(32).toString('base64');
    const endpoint = await proxies.endpointFor(peer);
    stranger.socket.send('nope', Number(endpoint.split(':')[1]), '127.0.0.1');
    proxies.deliver(Buffer.concat([randomBytes(32), Buffer.from([0, 1]), Buffer.from('x')]));
    await until(() => (proxies?.counters.dropped === 1 ? true : undefined), 'the unknown peer\'s packet dropped');
    expect(sent).toEqual([]);
    proxies.retain(new Set());
    expect(proxies.isRelayEndpoint(endpoint)).toBe(false);
  });
});
