/**
 * The relay across replicas (docs/protocol.md "Relays"): two `serve`
 * processes sharing PostgreSQL and Redis, each with its private listener.
 * Devices whose sessions are on different replicas reach each other over
 * the replicas' link; when one replica dies (SIGKILL) and its device
 * reconnects to the other, they reach each other there.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import WebSocket from 'ws';
import { HEADERS, REDIS_KEYS, RELAY_CLOSE_CODES, bearerAuthorization, paths } from '../../src/protocol/index.js';
import { privateKey, signPrivateToken, signRelayLinkToken } from '../../src/server/access/index.js';
import { hasRedis, requireBinary } from '../support/binaries.js';
import { createDatabase, freePort } from '../support/postgres-server.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import { eventually, Fleet, http, metric, requireBuild, startReplica, wsUpgradeStatus, type Replica } from '../gateway/support.js';
import { enrollKeyed, packet, RelayPeer, type KeyedDevice } from './support.js';

const ADMIN = 'relay-replicas-admin';
const SECRET = 'relay-replicas-secret-0123456789abcdef';
const pgAdminUrl = inject('pgAdminUrl');
const runs = pgAdminUrl !== '' && requireBinary('redis-server', hasRedis());

/** Status of a relay link upgrade at `privateUrl` with `token`. */
function linkStatus(privateUrl: string, token: string | undefined): Promise<number> {
  return wsUpgradeStatus(`${privateUrl.replace(/^http/, 'ws')}${paths.privateRelay()}`, token);
}

describe.runIf(runs)('the relay across replicas (real processes, PostgreSQL, Redis)', () => {
  let redis: RedisServer;
  let inspect: Redis;
  let a: Replica;
  let b: Replica;
  let fleet: Fleet;
  let x: KeyedDevice;
  let y: KeyedDevice;
  const peers: RelayPeer[] = [];
  const ids = new Map<Replica, string>();
  const connect = async (base: string, d: KeyedDevice): Promise<RelayPeer> => {
    const p = await RelayPeer.connect(base, d.token);
    peers.push(p);
    return p;
  };

  beforeAll(async () => {
    requireBuild();
    redis = await startRedis();
    inspect = new Redis(redis.url, { lazyConnect: true });
    await inspect.connect();
    const databaseUrl = await createDatabase(pgAdminUrl, 'relay');
    const extra = ['--database-url', databaseUrl, '--redis-url', redis.url, '--replica-lease-ttl', '3', '--safety-check-interval', '30'];
    const replica = async (): Promise<Replica> => startReplica({ privatePort: await freePort(), adminToken: ADMIN, secret: SECRET, extra });
    a = await replica(); // migrates first
    b = await replica();
    await eventually('both replicas to be listed as relays', async () => {
      const list = (await http(a.url, 'GET', paths.replicas(), ADMIN)).body as { items: { id: string; private_url: string | null }[] };
      for (const r of list.items) for (const rep of [a, b]) if (r.private_url === rep.privateUrl) ids.set(rep, r.id);
      return ids.size === 2;
    });
    fleet = await Fleet.create(a.url, ADMIN);
    [x, y] = await Promise.all([enrollKeyed(a.url, fleet.org, fleet.registrationKey), enrollKeyed(a.url, fleet.org, fleet.registrationKey)]);
  });

  afterAll(async () => {
    for (const p of peers) p.close();
    await Promise.all([a, b].map((r) => r?.stop()));
    inspect?.disconnect();
    await redis?.dispose();
  });

  it('lists both replicas as relays', async () => {
    const list = (await http(b.url, 'GET', paths.relays(), x.token)).body as { items: { id: string; url: string | null }[] };
    expect(list.items.map((i) => i.id).sort()).toEqual([ids.get(a), ids.get(b)].sort());
  });

  it('carries packets both ways between devices whose sessions are on different replicas, over one link', async () => {
    const onA = await connect(a.url, x);
    const onB = await connect(b.url, y);
    // Each replica announces its session in the relay registry (Redis); until the other sees it, packets are not delivered, as on a lossy path.
    await eventually('the sessions in the relay registry', async () => {
      const [hx, hy] = await Promise.all([inspect.hkeys(REDIS_KEYS.relayRegistry(fleet.org, x.key)), inspect.hkeys(REDIS_KEYS.relayRegistry(fleet.org, y.key))]);
      return hx.includes(ids.get(a) ?? '') && hy.includes(ids.get(b) ?? '');
    });
    await onA.sendUntilReceived(onB, x.key, y.key, packet('x-to-y'));
    await onB.sendUntilReceived(onA, y.key, x.key, packet('y-to-x'));
    expect(onA.received.every((r) => r.key === y.key)).toBe(true);
    expect(onB.received.every((r) => r.key === x.key)).toBe(true);

    // Several records in one message cross as they are.
    const burst = [packet('b1'), packet('b2'), packet('b3')];
    const forwarded = await metric(a.url, 'fleetplane_relay_packets_total', { result: 'forwarded' });
    const seen = onB.from(x.key).length;
    onA.send(y.key, burst);
    await eventually('the burst to arrive', () => onB.from(x.key).length === seen + 3);
    expect(onB.from(x.key).slice(seen)).toEqual(burst);
    expect(await metric(a.url, 'fleetplane_relay_packets_total', { result: 'forwarded' })).toBe(forwarded + 3);
    expect(await metric(b.url, 'fleetplane_relay_packets_total', { result: 'delivered' })).toBeGreaterThanOrEqual(4);
    // One link between the two, used both ways.
    await eventually('one link each way', async () => (await metric(a.url, 'fleetplane_relay_links')) === 1 && (await metric(b.url, 'fleetplane_relay_links')) === 1);
  });

  it('accepts a link only with a link token for the receiving replica', async () => {
    const key = privateKey(SECRET);
    const bId = ids.get(b) ?? '';
    const aId = ids.get(a) ?? '';
    const got = {
      none: await linkStatus(b.privateUrl, undefined),
      'for another replica': await linkStatus(b.privateUrl, await signRelayLinkToken(key, aId, aId)),
      'an agent call token': await linkStatus(b.privateUrl, await signPrivateToken(key, aId, { deviceId: bId, method: 'ping', deadlineMs: 1_000 })),
      'another secret': await linkStatus(b.privateUrl, await signRelayLinkToken(privateKey('another-secret-0123456789abcdef'), aId, bId)),
      'a device token': await linkStatus(b.privateUrl, x.token),
    };
    expect(got).toEqual({ none: 401, 'for another replica': 401, 'an agent call token': 401, 'another secret': 401, 'a device token': 401 });
    expect(await linkStatus(b.privateUrl, await signRelayLinkToken(key, 'some-replica', bId))).toBe(101);
  });

  it('after a replica is killed, its device reconnects to the other and the two reach each other there', async () => {
    const onA = peers.find((p) => p.open && p.from(y.key).length > 0);
    const onB = peers.find((p) => p.open && p.from(x.key).length > 0);
    if (!onA || !onB) throw new Error('the sessions of the previous test are gone');
    await b.kill();
    expect(await onB.closeCode()).not.toBe(RELAY_CLOSE_CODES.revoked);
    const again = await connect(a.url, y);
    await onA.sendUntilReceived(again, x.key, y.key, packet('x-to-y-again'));
    await again.sendUntilReceived(onA, y.key, x.key, packet('y-to-x-again'));
    expect(await metric(a.url, 'fleetplane_relay_sessions')).toBe(2);
  });
});
