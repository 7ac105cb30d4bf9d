import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { SignJWT } from 'jose';
import { PRIVATE_JWT_AUDIENCE, PRIVATE_JWT_CLAIMS, REDIS_KEYS, paths, type Replica as ReplicaRow } from '../../src/protocol/index.js';
import { privateKey, signPrivateToken } from '../../src/server/access/index.js';
import { hasRedis, requireBinary } from '../support/binaries.js';
import { createDatabase, freePort } from '../support/postgres-server.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import { delay, errorCode, eventually, Fleet, http, metric, requireBuild, rpc, startAgent, startReplica, type Replica, type TestAgent } from './support.js';

const ADMIN = 'replicas-admin-token';
const SECRET = 'replicas-shared-secret-0123456789';
const pgAdminUrl = inject('pgAdminUrl');
type ReplicaList = { items: ReplicaRow[] };
const runs = pgAdminUrl !== '' && requireBinary('redis-server', hasRedis());

describe.runIf(runs)('agent gateway across replicas (real processes, PostgreSQL, Redis)', () => {
  let redis: RedisServer;
  let inspect: Redis;
  let a: Replica;
  let b: Replica;
  let c: Replica;
  let fleet: Fleet;
  const agents: TestAgent[] = [];
  /** Replica id by private URL. */
  const ids = new Map<string, string>();

  const agentOn = (url: string | (() => string), token: string, handlers: Parameters<typeof startAgent>[2] = {}): TestAgent => {
    const agent = startAgent(url, token, handlers);
    agents.push(agent);
    return agent;
  };

  beforeAll(async () => {
    requireBuild();
    redis = await startRedis();
    inspect = new Redis(redis.url, { lazyConnect: true });
    await inspect.connect();
    const databaseUrl = await createDatabase(pgAdminUrl, 'gw');
    const extra = ['--database-url', databaseUrl, '--redis-url', redis.url, '--replica-lease-ttl', '2', '--safety-check-interval', '30'];
    const replica = async (): Promise<Replica> => startReplica({ privatePort: await freePort(), adminToken: ADMIN, secret: SECRET, extra });
    a = await replica(); // migrates first
    [b, c] = await Promise.all([replica(), replica()]);
    // Eventually: with a 2 s lease, a replica slowed by a busy machine can miss a renewal and be collected
    // until its next heartbeat registers it again.
    await eventually('all three replicas are listed', async () => {
      const list = (await http(a.url, 'GET', paths.replicas(), ADMIN)).body as ReplicaList;
      for (const r of list.items) if (r.private_url) ids.set(r.private_url, r.id);
      return [a, b, c].every((r) => ids.has(r.privateUrl));
    });
    fleet = await Fleet.create(a.url, ADMIN);
  });

  afterAll(async () => {
    await Promise.all(agents.map((x) => x.stop()));
    await Promise.all([a, b, c].map((r) => r?.stop()));
    inspect?.disconnect();
    await redis?.dispose();
  });

  it('routes a request on replica A to an agent connected only to replica B', async () => {
    const d = await fleet.enroll();
    const agent = agentOn(b.url, d.token, { status: async () => ({ where: 'b' }) });
    await agent.client.whenConnected();
    const forwarded = await metric(a.url, 'fleetplane_agent_rpc_requests_total', { route: 'forwarded' });
    expect(await rpc(a.url, fleet.orgAdmin, fleet.org, d.id, 'status')).toEqual({ status: 200, body: { where: 'b' } });
    expect(await metric(a.url, 'fleetplane_agent_rpc_requests_total', { route: 'forwarded' })).toBe(forwarded + 1);
    expect(agent.calls.get('status')).toBe(1);
  });

  it('waits for an absent agent that connects to another replica 2 s later; gives up at the deadline otherwise', async () => {
    const d = await fleet.enroll();
    const pending = rpc(a.url, fleet.orgAdmin, fleet.org, d.id, 'ping', { wait: 15 });
    await eventually('the request to park on A', async () => (await metric(a.url, 'fleetplane_agent_rpc_waiters')) === 1);
    await delay(2_000);
    agentOn(b.url, d.token);
    expect(await pending).toEqual({ status: 200, body: { pong: true, revision: 7 } });

    const never = await fleet.enroll();
    const timedOut = await rpc(a.url, fleet.orgAdmin, fleet.org, never.id, 'ping', { wait: 1 });
    expect(timedOut.status).toBe(504);
    expect(errorCode(timedOut)).toBe('agent_not_connected');
    expect(await metric(a.url, 'fleetplane_agent_rpc_waiters')).toBe(0);
  });

  it('an agent connected through two replicas handles each of 100 requests exactly once', async () => {
    const d = await fleet.enroll();
    const seen = new Map<number, number>();
    const handler = (who: string) => async (params: Record<string, unknown>) => {
      const n = Number(params['n']);
      seen.set(n, (seen.get(n) ?? 0) + 1);
      return { who, n };
    };
    const viaA = agentOn(a.url, d.token, { count: handler('a') });
    const viaB = agentOn(b.url, d.token, { count: handler('b') });
    await Promise.all([viaA.client.whenConnected(), viaB.client.whenConnected()]);
    await eventually('both tunnels registered', async () => (await inspect.hlen(REDIS_KEYS.agentRegistry(d.id))) === 2);
    // Through C (no tunnel: each request forwarded to A or B) and through A (local).
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, n) => rpc(n % 2 === 0 ? c.url : a.url, fleet.orgAdmin, fleet.org, d.id, 'count', { params: { n } })),
    );
    expect(answers.filter((x) => x.status !== 200)).toEqual([]);
    expect([...seen.keys()].sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, n) => n));
    expect([...seen.values()].every((count) => count === 1)).toBe(true);
    expect((viaA.calls.get('count') ?? 0) + (viaB.calls.get('count') ?? 0)).toBe(100);
    expect(viaB.calls.get('count') ?? 0).toBeGreaterThan(0); // C forwarded some to B
  });

  it('1,000 waiters for one device cost no more registry reads than one', async () => {
    const reads = (): Promise<number> => metric(a.url, 'fleetplane_agent_registry_reads_total');
    const waitFor = async (token: string, deviceId: string, n: number): Promise<number> => {
      const before = await reads();
      const requests = Array.from({ length: n }, () => rpc(a.url, fleet.orgAdmin, fleet.org, deviceId, 'ping', { wait: 25 }));
      await eventually(`${n} parked requests`, async () => (await metric(a.url, 'fleetplane_agent_rpc_waiters')) === n, 20_000);
      agentOn(b.url, token);
      const answers = await Promise.all(requests);
      expect(answers.filter((x) => x.status !== 200)).toEqual([]);
      return (await reads()) - before;
    };
    const one = await fleet.enroll();
    const many = await fleet.enroll();
    const readsForOne = await waitFor(one.token, one.id, 1);
    const readsForMany = await waitFor(many.token, many.id, 1000);
    expect(readsForOne).toBeGreaterThan(0);
    expect(readsForMany).toBeLessThanOrEqual(readsForOne);
  });

  it('the private listener refuses forged, expired, wrong-audience and over-long tokens, and never makes a second hop', async () => {
    const d = await fleet.enroll();
    const agent = agentOn(b.url, d.token);
    await agent.client.whenConnected();
    await eventually('the tunnel registered', async () => (await inspect.hexists(REDIS_KEYS.agentRegistry(d.id), ids.get(b.privateUrl) ?? '')) === 1);
    const key = privateKey(SECRET);
    const path = paths.privateAgentRpc(d.id, 'ping');
    const send = (target: Replica, token: string | undefined): ReturnType<typeof http> => http(target.privateUrl, 'POST', path, token, {});
    const now = Math.floor(Date.now() / 1000);
    const token = (opts: { key?: Uint8Array; aud?: string; iat?: number; exp?: number; method?: string }): Promise<string> =>
      new SignJWT({ [PRIVATE_JWT_CLAIMS.method]: opts.method ?? 'ping', [PRIVATE_JWT_CLAIMS.deadlineMs]: 5_000 })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(d.id)
        .setAudience(opts.aud ?? PRIVATE_JWT_AUDIENCE)
        .setIssuedAt(opts.iat ?? now)
        .setExpirationTime(opts.exp ?? now + 10)
        .sign(opts.key ?? key);

    const valid = await send(b, await signPrivateToken(key, 'test', { deviceId: d.id, method: 'ping', deadlineMs: 5_000 }));
    expect(valid).toEqual({ status: 200, body: { result: { pong: true, revision: 7 } } });
    expect((await send(b, undefined)).status).toBe(401);
    expect((await send(b, await token({ key: privateKey('some-other-secret-0123456789') }))).status).toBe(401);
    expect((await send(b, await token({ iat: now - 120, exp: now - 60 }))).status).toBe(401);
    expect((await send(b, await token({ aud: 'fleetplane-public' }))).status).toBe(401);
    expect((await send(b, await token({ exp: now + 120 }))).status).toBe(401);
    expect((await send(b, await token({ method: 'force-sync' }))).status).toBe(401);
    expect(agent.calls.size).toBe(0);

    // A holds no tunnel to the device: it must not forward to B, only refuse.
    const pings = await metric(b.url, 'fleetplane_private_rpc_requests_total', { status: '200' });
    const hop = await send(a, await token({}));
    expect(hop.status).toBe(504);
    expect(errorCode(hop)).toBe('agent_not_connected');
    expect(await metric(b.url, 'fleetplane_private_rpc_requests_total', { status: '200' })).toBe(pings);
  });

  it('after kill -9 of the replica holding the tunnel, the agent reconnects elsewhere and requests succeed; the dead entries expire and are cleaned up', async () => {
    const d = await fleet.enroll();
    const cId = ids.get(c.privateUrl) ?? '';
    let attempts = 0;
    const agent = agentOn(() => (attempts++ === 0 ? c.url : a.url), d.token);
    await agent.client.whenConnected();
    await eventually('the tunnel on C registered', async () => (await inspect.hexists(REDIS_KEYS.agentRegistry(d.id), cId)) === 1);
    expect((await rpc(b.url, fleet.orgAdmin, fleet.org, d.id, 'ping')).status).toBe(200);

    await c.kill();
    await eventually('the agent reconnected to A', () => attempts >= 2 && agent.client.connected);
    expect(await rpc(b.url, fleet.orgAdmin, fleet.org, d.id, 'ping', { wait: 10 })).toEqual({ status: 200, body: { pong: true, revision: 7 } });

    await eventually('C dropped out of the live replicas', async () => {
      const live = (await http(a.url, 'GET', paths.replicas(), ADMIN)).body as ReplicaList;
      return !live.items.some((r) => r.id === cId);
    });
    const refused = await metric(b.url, 'fleetplane_agent_rpc_forward_attempts_total', { result: 'not_delivered' });
    for (let i = 0; i < 5; i++) expect((await rpc(b.url, fleet.orgAdmin, fleet.org, d.id, 'ping')).status).toBe(200);
    expect(await metric(b.url, 'fleetplane_agent_rpc_forward_attempts_total', { result: 'not_delivered' })).toBe(refused); // C not tried any more
    await eventually('C removed from the registry by a read', async () => {
      expect((await rpc(b.url, fleet.orgAdmin, fleet.org, d.id, 'ping')).status).toBe(200);
      return (await inspect.hexists(REDIS_KEYS.agentRegistry(d.id), cId)) === 0;
    });
    expect(await inspect.hexists(REDIS_KEYS.agentRegistry(d.id), ids.get(a.privateUrl) ?? '')).toBe(1);
  });

  it('a replica shutting down gracefully removes all its registry entries', async () => {
    const bId = ids.get(b.privateUrl) ?? '';
    const keys = async (): Promise<string[]> => inspect.keys(REDIS_KEYS.agentRegistry('*'));
    const holding = async (): Promise<number> => (await Promise.all((await keys()).map((k) => inspect.hexists(k, bId)))).filter((x) => x === 1).length;
    expect(await holding()).toBeGreaterThan(1);
    await b.stop();
    expect(await holding()).toBe(0);
  });
});
