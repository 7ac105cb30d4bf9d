import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AGENT_ERROR_CODES, TUNNEL_CLOSE_CODES } from '../../src/protocol/index.js';
import { AgentMethodError, TunnelHandshakeError, type TunnelState } from '../../src/agent/tunnel/index.js';
import { FakeTunnelServer } from './fake-tunnel-server.js';
import { delay, eventually, startAgent, type TestAgent } from './support.js';

describe('tunnel client', () => {
  let server: FakeTunnelServer;
  let agent: TestAgent | undefined;

  beforeEach(async () => {
    server = await FakeTunnelServer.start();
  });

  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
    await server.close();
  });

  it('connects with the device token and serves ping, registered methods, unknown methods and handler errors', async () => {
    agent = startAgent(() => server.url, 'dev-token', {
      echo: async (params) => ({ echoed: params }),
      coded: async () => {
        throw new AgentMethodError('busy_here', 'try later');
      },
      broken: async () => {
        throw new Error('disk on fire');
      },
      nothing: async () => undefined,
    });
    const t = await server.tunnel(0);
    expect(server.tokens[0]).toBe('Bearer dev-token');
    expect(await t.request('ping')).toEqual({ id: 'r1', result: { pong: true, revision: 7 } });
    expect(await t.request('echo', { a: 1 })).toMatchObject({ result: { echoed: { a: 1 } } });
    expect(await t.request('nope')).toMatchObject({ error: { code: AGENT_ERROR_CODES.notFound } });
    expect(await t.request('coded')).toMatchObject({ error: { code: 'busy_here', message: 'try later' } });
    expect(await t.request('broken')).toMatchObject({ error: { code: AGENT_ERROR_CODES.internal, message: 'disk on fire' } });
    expect(await t.request('nothing')).toMatchObject({ result: null });
  });

  it('runs many requests at once over one tunnel', async () => {
    const n = 25;
    let started = 0;
    let release: () => void = () => undefined;
    const all = new Promise<void>((r) => (release = r));
    agent = startAgent(server.url, 't', {
      gate: async (params) => {
        if (++started === n) release();
        await all; // only returns once every request is running at the same time
        return params['i'];
      },
    });
    const t = await server.tunnel(0);
    const answers = await Promise.all(Array.from({ length: n }, (_, i) => t.request('gate', { i })));
    expect(answers.map((a) => ('result' in a ? a.result : undefined))).toEqual(Array.from({ length: n }, (_, i) => i));
  });

  it('gives handlers the deadline as an AbortSignal and answers deadline_exceeded at it', async () => {
    let sawAbort = false;
    agent = startAgent(server.url, 't', {
      slow: (_params, ctx) =>
        new Promise((_, reject) => {
          ctx.signal.addEventListener('abort', () => {
            sawAbort = true;
            reject(new Error('aborted'));
          });
        }),
    });
    const t = await server.tunnel(0);
    const answer = await t.request('slow', {}, 150);
    expect(answer).toMatchObject({ error: { code: AGENT_ERROR_CODES.deadlineExceeded } });
    expect(sawAbort).toBe(true);
  });

  it('answers pings; pings a server it has not heard from in an interval; gives up on a silent server and reconnects', async () => {
    agent = startAgent(server.url, 't', {}, { pingIntervalMs: 60 });
    const t = await server.tunnel(0);
    t.send({ type: 'ping' });
    await eventually('a pong', () => t.count('pong') === 1);
    await eventually('WebSocket pings from the agent', () => t.wsPings >= 2);
    // Keepalives are control frames, never JSON pings (a server pays a parse for those).
    expect(t.count('ping')).toBe(0);
    t.answerPings = false; // the agent hears nothing more from this connection
    await t.closed;
    await server.tunnel(1);
    expect(server.tunnels.length).toBe(2);
  });

  it('does not ping a server it hears from: pings of the server count', async () => {
    agent = startAgent(server.url, 't', {}, { pingIntervalMs: 60 });
    const t = await server.tunnel(0);
    let pongs = 0;
    t.ws.on('pong', () => pongs++);
    for (let i = 0; i < 8; i++) {
      t.ws.ping();
      await eventually('the agent answers the ping', () => pongs === i + 1);
      await new Promise((r) => setTimeout(r, 30));
    }
    expect(t.wsPings).toBe(0);
    expect(t.count('ping')).toBe(0);
    expect(agent.client.connected).toBe(true);
  });

  it('retries refused and lost connections with backoff until one opens', async () => {
    server.refuse = [401, 503];
    const states: TunnelState[] = [];
    agent = startAgent(server.url, 't', {}, { onStateChange: (s) => states.push(s) });
    const first = await server.tunnel(0);
    const refusals = states.flatMap((s) => (s.type === 'retrying' && s.error instanceof TunnelHandshakeError ? [s.error.status] : []));
    expect(refusals).toEqual([401, 503]);
    first.ws.close(1012, 'restart');
    const second = await server.tunnel(1);
    expect(await second.request('ping')).toMatchObject({ result: { pong: true } });
    expect(agent.client.connected).toBe(true);
    // Every wait was drawn under the backoff ceiling (100 ms doubling, capped at 500 ms).
    for (const s of states) if (s.type === 'retrying') expect(s.delayMs).toBeLessThan(500);
  });

  it('replaces an aged connection: opens the new one first, drains the old one, then closes it as drained', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    let started = 0;
    agent = startAgent(server.url, 't', {
      hold: async () => {
        started++;
        await gate;
        return 'held';
      },
    }, { maxConnectionAgeMs: 400 });
    const old = await server.tunnel(0);
    const inFlight = old.request('hold');
    const fresh = await server.tunnel(1);
    expect(old.closedAt).toBeUndefined(); // the new one opened while the old one still served
    // A request that reaches the draining connection is not started: the drained close tells the server to resend it.
    const late = old.request('hold');
    await delay(50);
    expect(started).toBe(1);
    release();
    expect(await inFlight).toMatchObject({ result: 'held' });
    expect(await old.closed).toBe(TUNNEL_CLOSE_CODES.drained);
    let lateAnswered = false;
    void late.then(() => (lateAnswered = true));
    await delay(20);
    expect(lateAnswered).toBe(false);
    expect(await fresh.request('ping')).toMatchObject({ result: { pong: true } });
  });

  it('stops everything when its signal aborts: running handlers are cancelled and answered, the tunnel closed', async () => {
    let cancelled = false;
    agent = startAgent(server.url, 't', {
      forever: (_p, ctx) =>
        new Promise((_, reject) =>
          ctx.signal.addEventListener('abort', () => {
            cancelled = true;
            reject(new Error('stopped'));
          }),
        ),
    });
    const t = await server.tunnel(0);
    const answer = t.request('forever');
    await delay(30);
    await agent.stop();
    agent = undefined;
    expect(cancelled).toBe(true);
    expect(await answer).toMatchObject({ error: { code: AGENT_ERROR_CODES.unavailable } });
    expect(await t.closed).toBe(TUNNEL_CLOSE_CODES.drained);
    await delay(300);
    expect(server.tunnels.length).toBe(1); // no reconnect after the stop
  });
});
