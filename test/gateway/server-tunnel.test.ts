import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { TUNNEL_CLOSE_CODES, decodeTunnelFrame, type TunnelRequest } from '../../src/protocol/index.js';
import { ServerTunnel } from '../../src/server/gateway/server-tunnel.js';
import { TunnelTable } from '../../src/server/gateway/tunnel-table.js';
import { eventually, silent } from './support.js';

/** A server-side tunnel wired to a raw client socket the test drives by hand. */
async function pair(wss: WebSocketServer, maxPending = 4, autoPong = true): Promise<{ tunnel: ServerTunnel; agent: WebSocket; server: WebSocket; requests: TunnelRequest[] }> {
  const accepted = new Promise<WebSocket>((resolve) => wss.once('connection', resolve));
  const agent = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, { autoPong });
  const requests: TunnelRequest[] = [];
  agent.on('message', (data: Buffer) => {
    const f = decodeTunnelFrame(data.toString());
    if (f && 'method' in f) requests.push(f);
  });
  await new Promise((r) => agent.once('open', r));
  const server = await accepted;
  const tunnel = new ServerTunnel(server, { deviceId: 'device-1', orgId: 'org-1', tokenId: 'token-1' }, { maxPending, answerGraceMs: 50, logger: silent });
  return { tunnel, agent, server, requests };
}

describe('server tunnel', () => {
  let wss: WebSocketServer;
  beforeEach(async () => {
    wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((r) => wss.once('listening', r));
  });
  afterEach(async () => {
    for (const c of wss.clients) c.terminate();
    await new Promise((r) => wss.close(r));
  });

  it('matches answers to requests and bounds pending requests', async () => {
    const { tunnel, agent, requests } = await pair(wss, 2);
    const never = new AbortController().signal;
    const first = tunnel.call('status', { a: 1 }, 1_000, never);
    const second = tunnel.call('status', {}, 1_000, never);
    expect(tunnel.full).toBe(true);
    expect(await tunnel.call('status', {}, 1_000, never)).toMatchObject({ kind: 'not_delivered' });
    await eventually('two requests at the agent', () => requests.length === 2);
    agent.send(JSON.stringify({ id: requests[1]?.id, error: { code: 'nope', message: 'no' } }));
    agent.send(JSON.stringify({ id: requests[0]?.id, result: { ok: true } }));
    expect(await first).toEqual({ kind: 'result', value: { ok: true } });
    expect(await second).toEqual({ kind: 'agent_error', code: 'nope', message: 'no' });
    expect(requests[0]).toMatchObject({ method: 'status', params: { a: 1 }, deadline_ms: 1_000 });
  });

  it('a drained close leaves unanswered requests not delivered; any other close leaves them lost', async () => {
    const never = new AbortController().signal;
    const drained = await pair(wss);
    const pendingDrained = drained.tunnel.call('ping', {}, 5_000, never);
    await eventually('the request at the agent', () => drained.requests.length === 1);
    drained.agent.close(TUNNEL_CLOSE_CODES.drained, 'drained');
    expect(await pendingDrained).toMatchObject({ kind: 'not_delivered' });

    const cut = await pair(wss);
    const pendingCut = cut.tunnel.call('ping', {}, 5_000, never);
    await eventually('the request at the agent', () => cut.requests.length === 1);
    cut.agent.terminate();
    expect(await pendingCut).toMatchObject({ kind: 'lost' });
  });

  it('cuts a tunnel whose agent stays silent for a whole round after a ping', async () => {
    const { tunnel, agent } = await pair(wss, 4, false);
    let pings = 0;
    agent.on('ping', () => pings++);
    const pending = tunnel.call('ping', {}, 60_000, new AbortController().signal);
    tunnel.heartbeat(); // heard from at the open: no ping yet
    tunnel.heartbeat(); // silent since: a WebSocket ping, which this agent doesn't answer
    await eventually('the ping at the agent', () => pings === 1);
    expect(tunnel.open).toBe(true);
    tunnel.heartbeat();
    await tunnel.whenClosed;
    expect(await pending).toMatchObject({ kind: 'lost', reason: expect.stringContaining(String(TUNNEL_CLOSE_CODES.pingTimeout)) });
  });

  it('keeps a tunnel whose agent answers WebSocket pings (as WebSocket libraries do by themselves), pinging it every other round', async () => {
    const { tunnel, agent, server } = await pair(wss);
    let pings = 0;
    agent.on('ping', () => pings++);
    for (let round = 1; round <= 6; round++) {
      // The tunnel's own pong listener was added first, so once this one fires the tunnel has heard the answer.
      const heard = round % 2 === 0 ? once(server, 'pong') : undefined;
      tunnel.heartbeat();
      if (heard) {
        await heard;
        expect(pings).toBe(round / 2);
      }
    }
    expect(tunnel.open).toBe(true);
    expect(pings).toBe(3);
  });

  // Two ways an agent speaks each round; either way it is heard, so the server never pings it.
  const speakers: [string, (agent: WebSocket) => Promise<void>][] = [
    [
      'a JSON ping frame, answered with a pong frame',
      async (agent) => {
        const pong = new Promise<void>((resolve) => {
          const onMessage = (data: Buffer): void => {
            const f = decodeTunnelFrame(data.toString());
            if (f && 'type' in f && f.type === 'pong') {
              agent.off('message', onMessage);
              resolve();
            }
          };
          agent.on('message', onMessage);
        });
        agent.send(JSON.stringify({ type: 'ping' }));
        await pong;
      },
    ],
    [
      'a WebSocket ping',
      async (agent) => {
        const pong = once(agent, 'pong');
        agent.ping();
        await pong;
      },
    ],
  ];

  it.each(speakers)('never pings an agent it hears from every round: %s', async (_, speak) => {
    const { tunnel, agent } = await pair(wss);
    let pings = 0;
    agent.on('ping', () => pings++);
    agent.on('message', (data: Buffer) => {
      // A JSON ping frame of the server's would be a ping too.
      const f = decodeTunnelFrame(data.toString());
      if (f && 'type' in f && f.type === 'ping') pings++;
    });
    for (let i = 0; i < 4; i++) {
      await speak(agent);
      tunnel.heartbeat();
    }
    await new Promise((r) => setTimeout(r, 30));
    expect(tunnel.open).toBe(true);
    expect(pings).toBe(0);
  });

  it('answers past the deadline as deadline_exceeded, and drops the answer of a caller that gave up', async () => {
    const { tunnel, agent, requests } = await pair(wss);
    expect(await tunnel.call('slow', {}, 20, new AbortController().signal)).toMatchObject({ kind: 'agent_error', code: 'deadline_exceeded' });
    const caller = new AbortController();
    const gone = tunnel.call('slow', {}, 5_000, caller.signal);
    caller.abort(new Error('caller left'));
    await expect(gone).rejects.toThrow('caller left');
    expect(tunnel.pending).toBe(0);
    await eventually('both requests at the agent', () => requests.length === 2);
    agent.send(JSON.stringify({ id: requests[1]?.id, result: 'late' })); // nobody waits: ignored
  });

  it('the table gives each request one tunnel, the least loaded, and closes the oldest past the per-device limit', async () => {
    const changes: string[] = [];
    const table = new TunnelTable(2, (c) => changes.push(`${c.type}`));
    const p1 = await pair(wss);
    const p2 = await pair(wss);
    table.add(p1.tunnel);
    table.add(p2.tunnel);
    expect(table.pick('device-1')).toBe(p2.tunnel); // newest among equals
    void p2.tunnel.call('x', {}, 5_000, new AbortController().signal);
    expect(table.pick('device-1')).toBe(p1.tunnel); // least loaded
    const p3 = await pair(wss);
    table.add(p3.tunnel);
    await p1.tunnel.whenClosed;
    await eventually('the oldest removed', () => table.size === 2);
    expect(changes).toEqual(['opened', 'opened', 'opened', 'closed']);
    expect(table.pick('device-2')).toBeUndefined();
  });
});
