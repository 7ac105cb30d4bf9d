import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { FleetplaneClient, type FetchLike } from '../../src/client/index.js';
import { StatusReporter, type StatusFields } from '../../src/agent/index.js';
import type { DeviceStatusInput } from '../../src/protocol/index.js';

const ORG = '00000000-0000-4000-8000-0000000000aa';
const DEV = '00000000-0000-4000-8000-000000000001';
const initial: StatusFields = { applied_revision: null, apply_error: null, local_endpoints: [], os: 'test-os', agent_version: 'test' };

type Answer = 'ok' | 'fail' | 'gone' | 'network' | 'hold';

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
    return json(200, { ...this.puts.at(-1), last_seen: new Date().toISOString() });
  };
  release(): void {
    for (const r of this.#held.splice(0)) r();
  }
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
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
