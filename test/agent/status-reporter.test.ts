import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FleetplaneClient, type FetchLike } from '../../src/client/index.js';
import { StatusReporter, type StatusFields } from '../../src/agent/index.js';
import type { DeviceStatusInput } from '../../src/protocol/index.js';
import { FakeStatusTunnel } from './support/fake-status-tunnel.js';

const ORG = '00000000-0000-4000-8000-0000000000aa';
const DEV = '00000000-0000-4000-8000-000000000001';
const initial: StatusFields = { applied_revision: null, apply_error: null, local_endpoints: [], os: 'test-os', agent_version: 'test' };

type Answer = 'ok' | 'fail' | 'gone' | 'network' | 'hold' | 'busy';

/** A fake server for the status PUT: records bodies; each answer is taken from `answers` (default ok). */
class FakeStatusServer {
  readonly puts: DeviceStatusInput[] = [];
  answers: Answer[] = [];
  #held: Array<() => void> = [];
  readonly fetch: FetchLike = async (url, init) => {
    expect(url).toContain(`/api/organizations/${ORG}/devices/${DEV}/status`);
    expect(init.method).toBe('PUT');
    this.puts.push(JSON.parse(String(init.body)) as DeviceStatusInput);
    const answer = this.answers.shift() ?? 'ok';
    if (answer === 'hold') await new Promise<void>((r) => this.#held.push(r));
    if (answer === 'network') throw new TypeError('fetch failed');
    if (answer === 'fail') return json(500, { error: { code: 'internal', message: 'boom' } });
    if (answer === 'gone') return json(404, { error: { code: 'not_found', message: 'device not found' } });
    if (answer === 'busy') return json(503, { error: { code: 'unavailable', message: 'overloaded' } }, { 'retry-after': '2' });
    return json(200, { ...this.puts.at(-1), last_seen: new Date().toISOString() });
  };
  release(): void {
    for (const r of this.#held.splice(0)) r();
  }
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const stops: AbortController[] = [];
afterEach(() => {
  for (const s of stops.splice(0)) s.abort();
});

function start(server: FakeStatusServer, intervalMs = 60_000, onRejected?: (kind: string) => void, minSpacingMs = 0) {
  const reporter = new StatusReporter({
    client: new FleetplaneClient({ baseUrl: 'http://fake', token: 't', fetch: server.fetch }),
    org: ORG,
    deviceId: DEV,
    intervalMs,
    initial,
    logger: pino({ level: 'silent' }),
    backoff: { initialMs: 5, maxMs: 10 },
    minSpacingMs,
    ...(onRejected ? { onRejected } : {}),
  });
  const stop = new AbortController();
  stops.push(stop);
  const done = reporter.run(stop.signal);
  return { reporter, stop, done };
}

describe('StatusReporter', () => {
  it('sends a change at once, and coalesces changes made while a send is in flight into one send of the latest', async () => {
    const server = new FakeStatusServer();
    server.answers = ['hold'];
    const { reporter } = start(server);
    reporter.update({ applied_revision: 1 });
    await until(() => server.puts.length === 1, 'the first PUT');
    reporter.update({ applied_revision: 2 });
    reporter.update({ applied_revision: 3, apply_error: 'nft failed' });
    reporter.update({ applied_revision: 4, apply_error: null });
    server.release();
    await until(() => server.puts.length === 2, 'the second PUT');
    await new Promise((r) => setTimeout(r, 30));
    expect(server.puts).toHaveLength(2);
    expect(server.puts[0]).toMatchObject({ online: true, applied_revision: 1, apply_error: null, os: 'test-os', agent_version: 'test' });
    expect(server.puts[1]).toMatchObject({ applied_revision: 4, apply_error: null });
  });

  it('spaces flushes: a burst of changes goes up in a few PUTs, the last with the latest status', async () => {
    const server = new FakeStatusServer();
    const { reporter } = start(server, 60_000, undefined, 60);
    const t0 = Date.now();
    for (let i = 1; i <= 20; i++) {
      reporter.update({ applied_revision: i });
      await new Promise((r) => setTimeout(r, 5));
    }
    const elapsed = Date.now() - t0;
    await until(() => server.puts.at(-1)?.applied_revision === 20, 'the latest status');
    // At most one flush per spacing while changes kept coming, plus the last one.
    expect(server.puts.length).toBeLessThanOrEqual(Math.ceil(elapsed / 60) + 1);
    expect(server.puts.length).toBeLessThan(20);
  });

  it('sends nothing for an update that changes nothing', async () => {
    const server = new FakeStatusServer();
    const { reporter } = start(server);
    reporter.update({ applied_revision: 5 });
    await until(() => server.puts.length === 1, 'the PUT');
    reporter.update({ applied_revision: 5 });
    await new Promise((r) => setTimeout(r, 30));
    expect(server.puts).toHaveLength(1);
  });

  it('refreshes last_seen every interval without changes', async () => {
    const server = new FakeStatusServer();
    start(server, 20);
    await until(() => server.puts.length >= 3, 'three periodic PUTs');
    expect(server.puts.every((p) => p.applied_revision === null)).toBe(true);
  });

  it('retries a failed flush as a whole until it goes through, with the latest status', async () => {
    const server = new FakeStatusServer();
    server.answers = ['fail', 'network', 'fail'];
    const { reporter } = start(server);
    reporter.update({ applied_revision: 7, local_endpoints: ['192.0.2.1:51820'] });
    // Retries come 0–10 ms apart (full jitter), so more than one may land between two checks.
    await until(() => server.puts.length >= 2, 'a retry');
    reporter.update({ applied_revision: 8 });
    await until(() => server.puts.at(-1)?.applied_revision === 8 && server.puts.length >= 4 && reporter.stats.last_error === null, 'the latest status, sent');
    const last = server.puts.at(-1);
    expect(last).toMatchObject({ applied_revision: 8, local_endpoints: ['192.0.2.1:51820'] });
    expect(reporter.stats.failed).toBe(3);
    expect(reporter.stats.sent).toBeGreaterThanOrEqual(1);
    expect(reporter.stats.last_error).toBeNull();
  });

  it('stops for good when the server says the device is gone: no resend, no periodic report', async () => {
    const server = new FakeStatusServer();
    server.answers = ['gone'];
    const rejected: string[] = [];
    const { reporter } = start(server, 20, (kind) => rejected.push(kind));
    reporter.update({ applied_revision: 1 });
    await until(() => rejected.length === 1, 'the rejection');
    reporter.update({ applied_revision: 2 });
    await new Promise((r) => setTimeout(r, 80));
    expect(rejected).toEqual(['device_gone']);
    expect(server.puts).toHaveLength(1);
    expect(reporter.deleted).toBe(true);
  });

  it('after deviceDeleted() nothing is sent, not even a failed flush retried', async () => {
    const server = new FakeStatusServer();
    server.answers = ['hold'];
    const { reporter, stop, done } = start(server, 20);
    reporter.update({ applied_revision: 1 });
    await until(() => server.puts.length === 1, 'the first PUT');
    server.answers = ['fail'];
    reporter.deviceDeleted();
    reporter.update({ applied_revision: 2 });
    server.release();
    await new Promise((r) => setTimeout(r, 80));
    expect(server.puts).toHaveLength(1);
    stop.abort();
    await done;
    await reporter.goodbye(100);
    expect(server.puts).toHaveLength(1);
  });

  it('says goodbye with online: false', async () => {
    const server = new FakeStatusServer();
    const { reporter, stop, done } = start(server);
    reporter.update({ applied_revision: 3 });
    await until(() => server.puts.length === 1, 'the PUT');
    stop.abort();
    await done;
    await reporter.goodbye(1000);
    expect(server.puts.at(-1)).toMatchObject({ online: false, applied_revision: 3 });
  });
});

/** A reporter with a tunnel attached (as the agent wires it): statuses prefer the tunnel. */
function startWithTunnel(server: FakeStatusServer, tunnel: FakeStatusTunnel, opts: { intervalMs?: number; ackTimeoutMs?: number; onRejected?: (kind: string) => void } = {}) {
  const reporter = new StatusReporter({
    client: new FleetplaneClient({ baseUrl: 'http://fake', token: 't', fetch: server.fetch }),
    org: ORG,
    deviceId: DEV,
    intervalMs: opts.intervalMs ?? 60_000,
    initial,
    logger: pino({ level: 'silent' }),
    backoff: { initialMs: 5, maxMs: 10 },
    minSpacingMs: 0,
    ackTimeoutMs: opts.ackTimeoutMs ?? 5_000,
    ...(opts.onRejected ? { onRejected: opts.onRejected } : {}),
  });
  reporter.attachTunnel(tunnel);
  const stop = new AbortController();
  stops.push(stop);
  const done = reporter.run(stop.signal);
  return { reporter, stop, done };
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('StatusReporter over the tunnel', () => {
  it('sends the status on attach and every change as status frames, and makes no PUT while they are acked, not even periodic ones', async () => {
    const server = new FakeStatusServer();
    const tunnel = new FakeStatusTunnel();
    const { reporter } = startWithTunnel(server, tunnel, { intervalMs: 20 });
    await until(() => tunnel.frames.length === 1, 'the status sent on attach');
    reporter.update({ applied_revision: 1 });
    await until(() => tunnel.frames.at(-1)?.applied_revision === 1, 'the first change');
    reporter.update({ applied_revision: 2, apply_error: 'nft failed' });
    await until(() => tunnel.frames.at(-1)?.applied_revision === 2, 'the second change');
    await pause(100); // five status intervals
    expect(server.puts).toHaveLength(0);
    expect(tunnel.frames).toHaveLength(3);
    expect(tunnel.frames[2]).toEqual({ applied_revision: 2, apply_error: 'nft failed', local_endpoints: [], os: 'test-os', agent_version: 'test' });
    expect(reporter.stats).toMatchObject({ sent: 3, sent_via_tunnel: 3, last_channel: 'tunnel', failed: 0 });
  });

  it('carries the path report (peers) in status frames as in PUTs', async () => {
    const server = new FakeStatusServer();
    const tunnel = new FakeStatusTunnel();
    const { reporter } = startWithTunnel(server, tunnel, { intervalMs: 20 });
    await until(() => tunnel.frames.length === 1, 'the status sent on attach');
    const peer = { public_key: 'a'.repeat(43) + '=', device_id: 'd2', path: 'direct' as const, via: null, relay_id: null, endpoint: '198.51.100.2:4000', latest_handshake: null, rx_bytes: 1, tx_bytes: 2 };
    reporter.update({ peers: [peer], peers_truncated: false });
    await until(() => tunnel.frames.at(-1)?.peers !== undefined, 'the path report over the tunnel');
    expect(tunnel.frames.at(-1)).toMatchObject({ peers: [peer], peers_truncated: false });
  });

  it('reports by PUT while the tunnel is down, refreshing every interval; a reconnection re-sends the status over the tunnel and ends the refreshes', async () => {
    const server = new FakeStatusServer();
    const tunnel = new FakeStatusTunnel(false);
    const { reporter } = startWithTunnel(server, tunnel, { intervalMs: 20 });
    reporter.update({ applied_revision: 3 });
    await until(() => server.puts.some((p) => p.applied_revision === 3), 'the change, by PUT');
    await until(() => server.puts.length >= 3, 'periodic PUTs');
    expect(tunnel.frames).toHaveLength(0);
    tunnel.open();
    await until(() => tunnel.frames.length === 1, 'the status re-sent on reconnection');
    expect(tunnel.frames[0]).toMatchObject({ applied_revision: 3 });
    const puts = server.puts.length;
    await pause(100);
    expect(server.puts).toHaveLength(puts);
    expect(reporter.stats.last_channel).toBe('tunnel');
  });

  it('sends the status by PUT when its ack does not come in time, then skips the tunnel until it reconnects', async () => {
    const server = new FakeStatusServer();
    const tunnel = new FakeStatusTunnel();
    tunnel.mode = 'silent';
    const { reporter } = startWithTunnel(server, tunnel, { ackTimeoutMs: 30 });
    await until(() => server.puts.length === 1, 'the fallback PUT');
    expect(tunnel.frames).toHaveLength(1);
    expect(server.puts[0]).toMatchObject({ online: true, applied_revision: null });
    reporter.update({ applied_revision: 1 });
    await until(() => server.puts.length === 2, 'the change, by PUT directly');
    expect(server.puts[1]).toMatchObject({ applied_revision: 1 });
    expect(tunnel.frames).toHaveLength(1);
    tunnel.mode = 'ack';
    tunnel.open();
    await until(() => tunnel.frames.length === 2, 'the status re-sent on reconnection');
    reporter.update({ applied_revision: 2 });
    await until(() => tunnel.frames.length === 3, 'the next change over the tunnel');
    expect(server.puts).toHaveLength(2);
    expect(reporter.stats).toMatchObject({ sent: 4, sent_via_tunnel: 2 });
  });

  it('sends the status by PUT when the server answers unavailable (or another error), and keeps trying the tunnel first', async () => {
    const server = new FakeStatusServer();
    const tunnel = new FakeStatusTunnel();
    tunnel.answers = ['unavailable', 'validation_failed'];
    const { reporter } = startWithTunnel(server, tunnel);
    await until(() => server.puts.length === 1, 'the first fallback');
    reporter.update({ applied_revision: 1 });
    await until(() => server.puts.length === 2, 'the second fallback');
    reporter.update({ applied_revision: 2 });
    await until(() => tunnel.frames.length === 3, 'the third frame');
    await until(() => reporter.stats.sent === 3, 'the third status delivered');
    expect(tunnel.frames.map((f) => f.applied_revision)).toEqual([null, 1, 2]);
    expect(server.puts.map((p) => p.applied_revision)).toEqual([null, 1]);
  });

  it.each([
    { when: 'in the ack of its frame', late: false },
    { when: 'after a frame that asked only for errors', late: true },
  ])('takes not_found $when as the device being gone: no PUT, nothing sent again, not even after a reconnection', async ({ late }) => {
    const server = new FakeStatusServer();
    const tunnel = new FakeStatusTunnel();
    tunnel.mode = late ? 'sent' : 'not_found';
    const rejected: string[] = [];
    const { reporter } = startWithTunnel(server, tunnel, { intervalMs: 20, onRejected: (kind) => rejected.push(kind) });
    await until(() => tunnel.frames.length === 1, 'the status sent on attach');
    if (late) tunnel.refuseLater(1, 'not_found');
    await until(() => rejected.length === 1, 'the rejection');
    reporter.update({ applied_revision: 2 });
    tunnel.open();
    tunnel.drop(); // and even while it is down, when refreshes would go by PUT
    await pause(80);
    expect(rejected).toEqual(['device_gone']);
    expect(tunnel.frames).toHaveLength(1);
    expect(server.puts).toHaveLength(0);
    expect(reporter.deleted).toBe(true);
  });

  it('counts a frame sent as answered only on error as delivered, and sends the status again by PUT when the server refuses it later', async () => {
    const server = new FakeStatusServer();
    const tunnel = new FakeStatusTunnel();
    tunnel.mode = 'sent';
    const { reporter } = startWithTunnel(server, tunnel);
    await until(() => reporter.stats.sent === 1, 'the status sent on attach');
    reporter.update({ applied_revision: 4 });
    await until(() => reporter.stats.sent === 2, 'the change');
    expect(reporter.stats).toMatchObject({ sent_via_tunnel: 2, last_channel: 'tunnel' });
    expect(server.puts).toHaveLength(0);
    tunnel.refuseLater(2, 'unavailable');
    await until(() => server.puts.length === 1, 'the status again, by PUT');
    expect(server.puts[0]).toMatchObject({ online: true, applied_revision: 4 });
    // One refusal sends one status by PUT; the next change goes over the tunnel again.
    reporter.update({ applied_revision: 5 });
    await until(() => tunnel.frames.at(-1)?.applied_revision === 5, 'the next change over the tunnel');
    expect(server.puts).toHaveLength(1);
  });

  it('says goodbye by PUT with online: false, even with the tunnel up', async () => {
    const server = new FakeStatusServer();
    const tunnel = new FakeStatusTunnel();
    const { reporter, stop, done } = startWithTunnel(server, tunnel);
    reporter.update({ applied_revision: 3 });
    await until(() => tunnel.frames.at(-1)?.applied_revision === 3, 'the change');
    stop.abort();
    await done;
    const frames = tunnel.frames.length;
    await reporter.goodbye(1000);
    expect(server.puts).toHaveLength(1);
    expect(server.puts[0]).toMatchObject({ online: false, applied_revision: 3 });
    expect(tunnel.frames).toHaveLength(frames);
  });
});

describe('StatusReporter and Retry-After', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('waits at least the Retry-After of a 503 before sending the status again', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const server = new FakeStatusServer();
    server.answers = ['busy'];
    // The backoff alone would retry within 10 ms.
    const { reporter } = start(server);
    reporter.update({ applied_revision: 1 });
    for (let i = 0; i < 100 && server.puts.length === 0; i++) await vi.advanceTimersByTimeAsync(1);
    expect(server.puts).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1_990);
    expect(server.puts).toHaveLength(1);
    // Retry-After 2 s plus at most half of it as jitter.
    await vi.advanceTimersByTimeAsync(1_020);
    expect(server.puts).toHaveLength(2);
    expect(reporter.stats.failed).toBe(1);
  });
});
