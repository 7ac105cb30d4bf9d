/**
 * The relay on one replica (docs/protocol.md "Relays"), a real server with
 * PGlite and the `ws` client: sessions, routing within an organization,
 * who may open one, how sessions end, and the relay list with its stream.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEADERS, MEDIA, RELAY_CLOSE_CODES, RELAY_LIST_EVENT, RELAY_MAX_MESSAGE_BYTES, RELAY_SESSION_BUFFER_BYTES, bearerAuthorization, paths } from '../../src/protocol/index.js';
import { startServer, type FleetServer } from '../../src/server/index.js';
import { eventually, Fleet, http, metric } from '../gateway/support.js';
import { enrollKeyed, packet, RelayListWatch, RelayPeer, relayMessage, upgradeStatus, type KeyedDevice } from './support.js';

const ADMIN = 'relay-single-admin';

describe('the relay on one replica', () => {
  let server: FleetServer;
  let base: string;
  let fleet: Fleet;
  let other: Fleet;
  let a: KeyedDevice;
  let b: KeyedDevice;
  let c: KeyedDevice;
  let peerA: RelayPeer;
  let peerB: RelayPeer;
  const peers: RelayPeer[] = [];
  const connect = async (d: KeyedDevice): Promise<RelayPeer> => {
    const p = await RelayPeer.connect(base, d.token);
    peers.push(p);
    return p;
  };
  const packets = (result: string): Promise<number> => metric(base, 'fleetplane_relay_packets_total', { result });

  beforeAll(async () => {
    server = await startServer({
      memory: true,
      logLevel: 'silent',
      host: '127.0.0.1',
      port: 0,
      adminToken: ADMIN,
      revocationCheckInterval: 0.1,
      // The relay list is read every second while streams follow it; it is sent again every second.
      replicaLeaseTtl: 3,
      bookmarkInterval: 1,
    });
    base = server.url ?? '';
    fleet = await Fleet.create(base, ADMIN);
    other = await Fleet.create(base, ADMIN);
    [a, b] = await Promise.all([enrollKeyed(base, fleet.org, fleet.registrationKey), enrollKeyed(base, fleet.org, fleet.registrationKey)]);
    c = await enrollKeyed(base, other.org, other.registrationKey);
    [peerA, peerB] = await Promise.all([connect(a), connect(b)]);
  });

  afterAll(async () => {
    for (const p of peers) p.close();
    await server?.close();
  });

  it('carries packets both ways between two devices of an organization, with the source key', async () => {
    const toB = [packet('a1'), packet('a2'), packet('a3')];
    const delivered = await packets('delivered');
    peerA.send(b.key, toB);
    await eventually('B receives A’s packets', () => peerB.from(a.key).length === 3);
    expect(peerB.from(a.key)).toEqual(toB);
    // Records are counted, not messages.
    expect(await packets('delivered')).toBe(delivered + 3);

    const toA = packet('b1');
    peerB.send(a.key, [toA]);
    await eventually('A receives B’s packet', () => peerA.from(b.key).length === 1);
    expect(peerA.from(b.key)).toEqual([toA]);
    expect(peerA.received.every((r) => r.key === b.key)).toBe(true);
    expect(await metric(base, 'fleetplane_relay_sessions')).toBe(2);
    expect(await metric(base, 'fleetplane_streams_open', { kind: 'relay' })).toBe(2);
  });

  it("keeps organizations apart: another organization's device can't reach them (counted no_session)", async () => {
    const peerC = await connect(c);
    const before = await packets('no_session');
    const fromC = packet('c');
    peerC.send(a.key, [fromC]);
    peerC.send(b.key, [fromC, fromC]);
    await eventually('the packets to be refused', async () => (await packets('no_session')) === before + 3);
    expect(peerA.from(c.key)).toEqual([]);
    expect(peerB.from(c.key)).toEqual([]);
    // And their packets can't reach it either.
    peerA.send(c.key, [packet('a-to-c')]);
    await eventually('the packet to be refused', async () => (await packets('no_session')) === before + 4);
    expect(peerC.received).toEqual([]);
    peerC.close();
  });

  it('drops a message whose framing is wrong (counted) and keeps the session', async () => {
    const malformed = await metric(base, 'fleetplane_relay_malformed_total');
    const good = relayMessage(b.key, [packet('framing')]);
    // A record running past the end, a record of length 0, and a key with no record.
    peerA.ws.send(good.subarray(0, good.length - 1), { binary: true });
    peerA.ws.send(Buffer.concat([good.subarray(0, 32), Buffer.from([0, 0])]), { binary: true });
    peerA.ws.send(good.subarray(0, 32), { binary: true });
    await eventually('the malformed messages to be counted', async () => (await metric(base, 'fleetplane_relay_malformed_total')) === malformed + 3);
    const after = packet('after-malformed');
    peerA.send(b.key, [after]);
    await eventually('B receives the next packet', () => peerB.from(a.key).some((p) => p.equals(after)));
    expect(peerB.from(a.key).filter((p) => p.toString().startsWith('framing'))).toEqual([]);
    expect(peerA.open).toBe(true);
  });

  it('drops what is sent to a session that does not read once 1 MiB waits for it (counted), and queues no more', async () => {
    const d = await enrollKeyed(base, fleet.org, fleet.registrationKey);
    const slow = await connect(d);
    slow.ws.pause();
    const session = server.relay.sessions.get(`${fleet.org}:${d.key}`);
    if (!session) throw new Error('no session');
    const dropped = await packets('dropped');
    const big = Buffer.alloc(RELAY_MAX_MESSAGE_BYTES - 1024, 1);
    let most = 0;
    await eventually('packets to the stalled session to be dropped', async () => {
      for (let i = 0; i < 16; i++) peerA.send(d.key, [big]);
      await new Promise((r) => setTimeout(r, 20));
      most = Math.max(most, session.held);
      return (await packets('dropped')) > dropped;
    });
    expect(most).toBeLessThanOrEqual(RELAY_SESSION_BUFFER_BYTES + RELAY_MAX_MESSAGE_BYTES);
    expect(session.held).toBeLessThanOrEqual(RELAY_SESSION_BUFFER_BYTES + RELAY_MAX_MESSAGE_BYTES);
    slow.close();
    slow.ws.resume();
  });

  it('opens sessions only with a device token; without an upgrade the path is 400', async () => {
    const got = {
      none: await upgradeStatus(base, undefined),
      unknown: await upgradeStatus(base, 'not-a-token'),
      admin: await upgradeStatus(base, ADMIN),
      'org admin': await upgradeStatus(base, fleet.orgAdmin),
      'org read': await upgradeStatus(base, fleet.reader),
      'registration key': await upgradeStatus(base, fleet.registrationKey),
      device: await upgradeStatus(base, c.token),
    };
    expect(got).toEqual({ none: 401, unknown: 401, admin: 403, 'org admin': 403, 'org read': 403, 'registration key': 403, device: 101 });
    expect((await http(base, 'GET', paths.relay(), c.token)).status).toBe(400);
    expect((await http(base, 'GET', paths.relay(), undefined)).status).toBe(401);
  });

  it('a second session of a device closes the first with 4001; the second carries its packets', async () => {
    const d = await enrollKeyed(base, fleet.org, fleet.registrationKey);
    const first = await connect(d);
    const second = await connect(d);
    expect(await first.closeCode()).toBe(RELAY_CLOSE_CODES.superseded);
    const p = packet('to-second');
    await peerA.sendUntilReceived(second, a.key, d.key, p);
    expect(first.received).toEqual([]);
    expect(second.open).toBe(true);
  });

  it('closes a session with 1003 on a text message, and with 1009 on a message over 64 KiB', async () => {
    const d = await enrollKeyed(base, fleet.org, fleet.registrationKey);
    const text = await connect(d);
    text.ws.send('hello');
    expect(await text.closeCode()).toBe(RELAY_CLOSE_CODES.unsupported);
    const big = await connect(d);
    big.ws.send(Buffer.alloc(RELAY_MAX_MESSAGE_BYTES + 1), { binary: true });
    expect(await big.closeCode()).toBe(RELAY_CLOSE_CODES.tooBig);
  });

  it('ends a session with 4003 once its device token is revoked; the token then opens none', async () => {
    const d = await enrollKeyed(base, fleet.org, fleet.registrationKey);
    const session = await connect(d);
    const ended = await metric(base, 'fleetplane_streams_ended_total', { kind: 'relay', cause: 'revoked' });
    await server.db.query('UPDATE tokens SET revoked_at = now() WHERE device_id = $1', [d.id]);
    expect(await session.closeCode()).toBe(RELAY_CLOSE_CODES.revoked);
    expect(await metric(base, 'fleetplane_streams_ended_total', { kind: 'relay', cause: 'revoked' })).toBe(ended + 1);
    expect(await upgradeStatus(base, d.token)).toBe(401);
  });

  it('lists this replica as a relay to any credential but a registration key', async () => {
    for (const token of [ADMIN, fleet.reader, c.token]) {
      const res = await http(base, 'GET', paths.relays(), token);
      expect(res.status).toBe(200);
      expect((res.body as { items: { id: string; url: string | null }[] }).items).toEqual([
        { id: server.replica.id, url: null, expires_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown as string },
      ]);
    }
    expect((await http(base, 'GET', paths.relays(), undefined)).status).toBe(401);
    expect((await http(base, 'GET', paths.relays(), fleet.registrationKey)).status).toBe(403);
  });

  it('follows the relay list: a replica appears, and disappears when its lease expires; relays off are never listed', async () => {
    const watch = new RelayListWatch(base, c.token);
    try {
      await eventually('the first line', () => watch.lines.length > 0);
      expect(watch.contentType).toBe(MEDIA.watch);
      expect(watch.lines[0]?.type).toBe(RELAY_LIST_EVENT);
      expect(watch.latestIds()).toEqual([server.replica.id]);
      const live = randomUUID();
      const off = randomUUID();
      await server.db.query(
        `INSERT INTO replicas (id, private_url, lease_expires_at, relay, relay_url)
         VALUES ($1, NULL, now() + interval '2 seconds', true, 'https://relay.example'), ($2, NULL, now() + interval '60 seconds', false, NULL)`,
        [live, off],
      );
      await eventually('the new relay to be listed', () => watch.latestIds().includes(live));
      const line = [...watch.lines].reverse().find((l) => l.type === RELAY_LIST_EVENT);
      expect(line?.value.items?.find((i) => i.id === live)?.url).toBe('https://relay.example');
      await eventually('the relay to disappear once its lease expired', () => !watch.latestIds().includes(live));
      expect(watch.lines.some((l) => l.value.items?.some((i) => i.id === off))).toBe(false);
      expect(watch.latestIds()).toEqual([server.replica.id]);
      // With nothing changing, the list is sent again every bookmark interval.
      const lines = watch.lines.length;
      await eventually('the list sent again', () => watch.lines.length > lines);
      expect(await metric(base, 'fleetplane_streams_open', { kind: 'relay_list' })).toBe(1);
    } finally {
      watch.close();
    }
  });

  it('a relay list stream ends with forbidden when its token is revoked', async () => {
    const d = await enrollKeyed(base, fleet.org, fleet.registrationKey);
    const watch = new RelayListWatch(base, d.token);
    await eventually('the first line', () => watch.lines.length > 0);
    await server.db.query('UPDATE tokens SET revoked_at = now() WHERE device_id = $1', [d.id]);
    await eventually('the stream to end', () => watch.done);
    expect(watch.lines.at(-1)).toEqual({ type: 'error', value: { code: 'forbidden', message: expect.any(String) as unknown as string } });
  });

  it('ends sessions with 1012 when the server shuts down', async () => {
    const open = peers.filter((p) => p.open);
    expect(open.length).toBeGreaterThan(1);
    await server.close();
    for (const code of await Promise.all(open.map((p) => p.closeCode()))) expect(code).toBe(RELAY_CLOSE_CODES.shutdown);
  });
});

describe('the relay turned off (--relay=false)', () => {
  let server: FleetServer;
  beforeAll(async () => {
    server = await startServer({ memory: true, logLevel: 'silent', host: '127.0.0.1', port: 0, adminToken: ADMIN, relay: false });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('opens no session and lists no relay', async () => {
    const base = server.url ?? '';
    const fleet = await Fleet.create(base, ADMIN);
    const d = await enrollKeyed(base, fleet.org, fleet.registrationKey);
    expect(await upgradeStatus(base, d.token)).toBe(404);
    expect((await http(base, 'GET', paths.relay(), d.token)).status).toBe(404);
    expect((await http(base, 'GET', paths.relays(), d.token)).body).toEqual({ items: [] });
    // The agent tunnel is still there.
    expect((await fetch(`${base}${paths.agentTunnel()}`, { headers: { [HEADERS.authorization]: bearerAuthorization(d.token) } })).status).toBe(400);
  });
});
