import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { makeSettings, SettingsError, startServer, type FleetServer } from '../../src/server/index.js';
import { AGENT_ERROR_CODES, HEADERS, TUNNEL_CLOSE_CODES, paths } from '../../src/protocol/index.js';
import { tunnelUrl } from '../../src/agent/tunnel/index.js';
import { agentCode, delay, errorCode, eventually, Fleet, http, metric, rpc, startAgent, wsUpgradeStatus, type TestAgent } from './support.js';

/** The HTTP status a tunnel upgrade with `token` gets (101 when it opened). */
function upgradeStatus(base: string, token: string | undefined): Promise<number> {
  return wsUpgradeStatus(tunnelUrl(base), token);
}

describe('agent gateway on one replica', () => {
  let server: FleetServer;
  let base: string;
  let fleet: Fleet;
  let device: { id: string; token: string };
  let agent: TestAgent;

  beforeAll(async () => {
    server = await startServer({ memory: true, logLevel: 'silent', host: '127.0.0.1', port: 0, adminToken: 'admin-secret' });
    base = server.url ?? '';
    fleet = await Fleet.create(base, 'admin-secret');
    device = await fleet.enroll();
    agent = startAgent(base, device.token, {
      status: async () => ({ applied_revision: 3 }),
      'force-sync': async () => ({ applied_revision: 4 }),
      fail: async () => {
        throw new Error('boom');
      },
    });
    await agent.client.whenConnected();
  });

  afterAll(async () => {
    await agent?.stop();
    await server?.close();
  });

  it('opens tunnels only with a device token', async () => {
    expect(await upgradeStatus(base, undefined)).toBe(401);
    expect(await upgradeStatus(base, 'not-a-token')).toBe(401);
    expect(await upgradeStatus(base, fleet.orgAdmin)).toBe(403);
    expect(await upgradeStatus(base, fleet.reader)).toBe(403);
    expect(await upgradeStatus(base, 'admin-secret')).toBe(403);
    expect(await upgradeStatus(base, fleet.registrationKey)).toBe(403);
    expect(await upgradeStatus(base, device.token)).toBe(101);
  });

  it('returns the agent result, agent errors as 502, unknown devices as 404', async () => {
    const ping = await rpc(base, fleet.orgAdmin, fleet.org, device.id, 'ping');
    expect(ping).toEqual({ status: 200, body: { pong: true, revision: 7 } });
    const failed = await rpc(base, fleet.orgAdmin, fleet.org, device.id, 'fail');
    expect(failed.status).toBe(502);
    expect(errorCode(failed)).toBe('agent_error');
    expect(agentCode(failed)).toBe(AGENT_ERROR_CODES.internal);
    const unknown = await rpc(base, fleet.orgAdmin, fleet.org, device.id, 'no-such-method');
    expect(unknown.status).toBe(502);
    expect(agentCode(unknown)).toBe(AGENT_ERROR_CODES.notFound);
    const missing = await rpc(base, fleet.orgAdmin, fleet.org, '00000000-0000-4000-8000-000000000000', 'ping', { wait: 0 });
    expect(missing.status).toBe(404);
    expect((await rpc(base, fleet.orgAdmin, fleet.org, device.id, 'Bad Name!')).status).toBe(400);
    expect((await rpc(base, fleet.orgAdmin, fleet.org, device.id, 'ping', { wait: 121 })).status).toBe(400);
  });

  it('authorizes: admins call anything, read tokens only ping and status, device tokens nothing', async () => {
    const other = await Fleet.create(base, 'admin-secret');
    const cases: [string, string, string, number][] = [
      ['admin token', 'admin-secret', 'force-sync', 200],
      ['org admin', fleet.orgAdmin, 'force-sync', 200],
      ['org admin', fleet.orgAdmin, 'status', 200],
      ['read token', fleet.reader, 'ping', 200],
      ['read token', fleet.reader, 'status', 200],
      ['read token', fleet.reader, 'force-sync', 403],
      ['read token', fleet.reader, 'fail', 403],
      ['device token', device.token, 'ping', 403],
      ['device token', device.token, 'status', 403],
      ['registration key', fleet.registrationKey, 'ping', 403],
      ['other org admin', other.orgAdmin, 'ping', 404],
      ['other org reader', other.reader, 'ping', 404],
      ['unknown token', 'nope', 'ping', 401],
    ];
    const forceSyncBefore = agent.calls.get('force-sync') ?? 0;
    for (const [who, token, method, status] of cases) {
      const a = await rpc(base, token, fleet.org, device.id, method, { wait: 0 });
      expect({ who, method, status: a.status }).toEqual({ who, method, status });
    }
    // Refused calls never reached the agent.
    expect((agent.calls.get('force-sync') ?? 0) - forceSyncBefore).toBe(2);
  });

  it('delivers many concurrent requests over one tunnel', async () => {
    const answers = await Promise.all(Array.from({ length: 50 }, () => rpc(base, fleet.orgAdmin, fleet.org, device.id, 'status')));
    expect(answers.every((a) => a.status === 200)).toBe(true);
  });

  it('waits for an absent agent that connects later, and gives up at the deadline', async () => {
    const late = await fleet.enroll();
    const pending = rpc(base, fleet.orgAdmin, fleet.org, late.id, 'ping', { wait: 10 });
    await eventually('the request to park', () => server.gateway.stats().parked === 1);
    await delay(2_000);
    const lateAgent = startAgent(base, late.token);
    try {
      expect(await pending).toEqual({ status: 200, body: { pong: true, revision: 7 } });
    } finally {
      await lateAgent.stop();
    }
    const never = await fleet.enroll();
    const timedOut = await rpc(base, fleet.orgAdmin, fleet.org, never.id, 'ping', { wait: 0.5 });
    expect(timedOut.status).toBe(504);
    expect(errorCode(timedOut)).toBe('agent_not_connected');
  });

  it('leaves no parked request behind when the caller disconnects', async () => {
    const absent = await fleet.enroll();
    const callers = Array.from({ length: 5 }, () => new AbortController());
    const requests = callers.map((c) => rpc(base, fleet.orgAdmin, fleet.org, absent.id, 'ping', { wait: 60, signal: c.signal }).catch((e: unknown) => e));
    await eventually('five parked requests', () => server.gateway.stats().parked === 5);
    expect(await metric(base, 'fleetplane_agent_rpc_waiters')).toBe(5);
    for (const c of callers) c.abort();
    // Each caller went away unanswered: an answer here would mean the server ended the wait itself.
    expect((await Promise.all(requests)).map((r) => (r instanceof Error ? r.name : r))).toEqual(Array(5).fill('AbortError'));
    await eventually('no parked request', () => server.gateway.stats().parked === 0);
    expect(server.gateway.stats().devices).toBe(0); // the device's bus subscription is gone too
    expect(await metric(base, 'fleetplane_agent_rpc_waiters')).toBe(0);
    expect(await metric(base, 'fleetplane_agent_rpc_wait_seconds_count', { outcome: 'aborted' })).toBe(5);
  });

  it('an agent that keeps replacing aged tunnels neither loses nor repeats a request', async () => {
    const d = await fleet.enroll();
    const seen = new Map<number, number>();
    let connects = 0;
    const aging = startAgent(
      base,
      d.token,
      {
        work: async (params) => {
          const n = Number(params['n']);
          seen.set(n, (seen.get(n) ?? 0) + 1);
          await delay(15);
          return n;
        },
      },
      { maxConnectionAgeMs: 250, onStateChange: (s) => void (s.type === 'connected' && connects++) },
    );
    try {
      await aging.client.whenConnected();
      const failures: unknown[] = [];
      for (let round = 0; round < 12; round++) {
        const answers = await Promise.all(
          Array.from({ length: 20 }, (_, i) => rpc(base, fleet.orgAdmin, fleet.org, d.id, 'work', { params: { n: round * 20 + i } })),
        );
        failures.push(...answers.filter((a, i) => a.status !== 200 || a.body !== round * 20 + i));
        await delay(40);
      }
      expect(failures).toEqual([]);
      expect(seen.size).toBe(240);
      expect([...seen.values()].every((count) => count === 1)).toBe(true);
      expect(connects).toBeGreaterThanOrEqual(3);
    } finally {
      await aging.stop();
    }
  });

  it('re-delivers through another tunnel what a drained tunnel never started; never what a cut tunnel may have run', async () => {
    const d = await fleet.enroll();
    const steady = startAgent(base, d.token, { work: async () => 'steady' });
    try {
      await steady.client.whenConnected();
      for (const [closeCode, expected] of [
        [TUNNEL_CLOSE_CODES.drained, { status: 200, body: 'steady' }],
        [1001, { status: 503 }],
      ] as const) {
        // A raw tunnel opened last: the newest tunnel gets the request.
        const raw = new WebSocket(tunnelUrl(base), { headers: { [HEADERS.authorization]: `Bearer ${d.token}` } });
        const got = new Promise<string>((resolve) => raw.once('message', (m: Buffer) => resolve(m.toString())));
        await new Promise((r) => raw.once('open', r));
        await eventually('both tunnels open', () => server.gateway.stats().tunnels >= 3);
        const answer = rpc(base, fleet.orgAdmin, fleet.org, d.id, 'work');
        expect(JSON.parse(await got)).toMatchObject({ method: 'work' });
        raw.close(closeCode, 'test');
        expect(await answer).toMatchObject(expected);
        await eventually('the raw tunnel gone', () => server.gateway.stats().tunnels === 2);
      }
      expect(steady.calls.get('work')).toBe(1);
    } finally {
      await steady.stop();
    }
  });

  it('closes the tunnel of a deleted device (its token is revoked) and refuses it from then on', async () => {
    const doomed = await fleet.enroll();
    const ws = new WebSocket(tunnelUrl(base), { headers: { [HEADERS.authorization]: `Bearer ${doomed.token}` } });
    const closed = new Promise<number>((resolve) => ws.once('close', (code: number) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    // The agent answers pings, so only the revocation can end the tunnel.
    ws.on('message', (data: WebSocket.RawData) => {
      if (String(data).includes('"ping"')) ws.send(JSON.stringify({ type: 'pong' }));
    });
    const gone = await http(base, 'DELETE', paths.device(fleet.org, doomed.id), fleet.orgAdmin);
    expect(gone.status).toBe(204);
    // Revocations are looked up every 2 s (--revocation-check-interval).
    expect(await Promise.race([closed, delay(15_000).then(() => 'still open')])).toBe(TUNNEL_CLOSE_CODES.revoked);
    expect(await upgradeStatus(base, doomed.token)).toBe(401);
    // Other devices' tunnels stay.
    expect((await rpc(base, fleet.orgAdmin, fleet.org, device.id, 'ping')).status).toBe(200);
  });

  it('refuses a private listener without a secret', () => {
    expect(() => makeSettings({ memory: true, privatePort: 0 })).toThrow(SettingsError);
    expect(() => makeSettings({ memory: true, privatePort: 0, privateSecret: 's3cret' })).not.toThrow();
  });

  it('counts tunnels and routed requests in the metrics', async () => {
    expect(await metric(base, 'fleetplane_agent_tunnels_open')).toBe(1);
    expect(await metric(base, 'fleetplane_agent_rpc_requests_total', { route: 'local' })).toBeGreaterThan(50);
    expect(await metric(base, 'fleetplane_agent_rpc_requests_total', { route: 'failed' })).toBeGreaterThan(0);
    expect(paths.agentTunnel()).toBe('/api/agent/tunnel');
  });
});
