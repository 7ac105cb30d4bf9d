/**
 * Status frames over the agent's tunnel, against a fake server: `sendStatus`
 * outcomes (ack, sent, error, late error, silence, no connection, a connection lost while
 * waiting), `seq` per connection, `onOpen` per connection, and the
 * handshake's Retry-After.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeviceStatusInput } from '../../src/protocol/index.js';
import { TunnelHandshakeError, type StatusRejection, type TunnelState } from '../../src/agent/tunnel/index.js';
import { ackAsAsked, ackStatus, FakeTunnelServer } from './fake-tunnel-server.js';
import { eventually, startAgent, type TestAgent } from './support.js';

const status = (applied_revision: number): DeviceStatusInput => ({
  applied_revision,
  apply_error: null,
  local_endpoints: ['192.0.2.1:51820'],
  os: 'test-os',
  agent_version: 'test',
});

describe('tunnel status frames', () => {
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

  it('answers not_connected while no connection is open', async () => {
    server.refuse = [503, 503, 503, 503, 503, 503, 503, 503];
    agent = startAgent(server.url, 't');
    expect(await agent.client.sendStatus(status(1), { timeoutMs: 50 })).toEqual({ type: 'not_connected' });
  });

  it('sends status frames with an increasing seq; asks for acks until the server acked one, then only for errors, which come to onStatusRejected', async () => {
    server.answerStatus = (f) =>
      f.status.applied_revision === 13 ? { type: 'status_ack', seq: f.seq, error: { code: 'not_found', message: 'device gone' } } : ackAsAsked(f);
    agent = startAgent(server.url, 't');
    const rejections: StatusRejection[] = [];
    agent.client.onStatusRejected((r) => rejections.push(r));
    await agent.client.whenConnected();
    expect(await agent.client.sendStatus(status(13))).toEqual({ type: 'rejected', code: 'not_found', message: 'device gone' });
    // A refusal doesn't tell that the server records statuses: the next frame still asks for its ack.
    expect(await agent.client.sendStatus(status(1))).toEqual({ type: 'acked' });
    expect(await agent.client.sendStatus(status(2))).toEqual({ type: 'sent' });
    expect(await agent.client.sendStatus(status(13))).toEqual({ type: 'sent' });
    await eventually('the late refusal', () => rejections.length === 1);
    expect(rejections).toEqual([{ seq: 4, code: 'not_found', message: 'device gone' }]);
    const t = await server.tunnel(0);
    expect(t.statuses().map((f) => [f.seq, f.ack])).toEqual([
      [1, undefined],
      [2, undefined],
      [3, 'errors'],
      [4, 'errors'],
    ]);
    expect(t.statuses()[1]).toEqual({ type: 'status', seq: 2, status: status(1) });
  });

  it('times out when the server ignores status frames (an older server); a late ack still tells that it records them', async () => {
    agent = startAgent(server.url, 't');
    await agent.client.whenConnected();
    expect(await agent.client.sendStatus(status(1), { timeoutMs: 50 })).toEqual({ type: 'timeout' });
    const t = await server.tunnel(0);
    expect(await agent.client.sendStatus(status(2), { timeoutMs: 50 })).toEqual({ type: 'timeout' });
    t.send({ type: 'status_ack', seq: 1 });
    // Frames arrive in order: once the agent answered this request, it has read the ack.
    await t.request('ping');
    t.answerStatus = ackAsAsked;
    expect(await agent.client.sendStatus(status(3), { timeoutMs: 5_000 })).toEqual({ type: 'sent' });
    await eventually('the third frame', () => t.count('status') === 3);
    expect(t.statuses().at(-1)?.ack).toBe('errors');
  });

  it('ends a frame waiting for its ack not_connected when the connection closes, and rejects on abort', async () => {
    agent = startAgent(server.url, 't');
    await agent.client.whenConnected();
    const t = await server.tunnel(0);
    const waiting = agent.client.sendStatus(status(1), { timeoutMs: 30_000 });
    await eventually('the frame', () => t.count('status') === 1);
    t.ws.close(1012, 'restart');
    expect(await waiting).toEqual({ type: 'not_connected' });

    await server.tunnel(1);
    await agent.client.whenConnected();
    const ac = new AbortController();
    const aborted = agent.client.sendStatus(status(2), { timeoutMs: 30_000, signal: ac.signal });
    ac.abort(new Error('stop'));
    await expect(aborted).rejects.toThrow('stop');
  });

  it('tells of every connection opened, and counts seq per connection', async () => {
    server.answerStatus = ackStatus;
    let opened = 0;
    agent = startAgent(server.url, 't');
    const off = agent.client.onOpen(() => opened++);
    await agent.client.whenConnected();
    await eventually('the first open', () => opened === 1);
    await agent.client.sendStatus(status(1));
    await agent.client.sendStatus(status(2));
    (await server.tunnel(0)).ws.close(1012, 'restart');
    const second = await server.tunnel(1);
    await eventually('the second open', () => opened === 2 && agent!.client.connected);
    expect(await agent.client.sendStatus(status(3))).toEqual({ type: 'acked' });
    expect(second.statuses().map((f) => f.seq)).toEqual([1]);
    off();
    second.ws.close(1012, 'restart');
    await server.tunnel(2);
    await eventually('the third connection', () => agent!.client.connected);
    expect(opened).toBe(2);
  });

  it('waits at least the Retry-After of a refused handshake before trying again', async () => {
    server.refuse = [{ status: 503, headers: { 'Retry-After': '2' } }];
    const states: TunnelState[] = [];
    agent = startAgent(server.url, 't', {}, { onStateChange: (s) => states.push(s) });
    await eventually('the refusal', () => states.some((s) => s.type === 'retrying'));
    const retrying = states.find((s) => s.type === 'retrying');
    if (retrying?.type !== 'retrying') throw new Error('expected a retrying state');
    expect(retrying.error).toBeInstanceOf(TunnelHandshakeError);
    expect((retrying.error as TunnelHandshakeError).retryAfterMs).toBe(2_000);
    // The test backoff is capped at 500 ms: only the Retry-After makes it longer (jitter up to half of it).
    expect(retrying.delayMs).toBeGreaterThanOrEqual(2_000);
    expect(retrying.delayMs).toBeLessThanOrEqual(3_000);
  });
});
