/**
 * Retry-After: parsing, the errors that carry it, the wait it imposes on
 * the backoff, and the retry loops (informers, followConvergence) that wait
 * for it. Loop timing runs on fake timers: no wall-clock assertion.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import {
  Backoff,
  FleetplaneClient,
  MAX_RETRY_AFTER_JITTER_MS,
  MAX_RETRY_AFTER_MS,
  SharedInformers,
  UnavailableError,
  ServerError,
  parseRetryAfter,
  retryAfterWait,
  type FetchLike,
  type InformerStatus,
} from '../../src/client/index.js';
import { FakeFleetServer } from './support/fake-fleet-server.js';
import { FAST, silentLogger } from './support/informer-harness.js';
import { until } from './support/wait.js';

const NOW = Date.parse('2026-11-23T12:00:00Z');

describe('parseRetryAfter', () => {
  it('reads delay-seconds and HTTP-dates', () => {
    expect(parseRetryAfter('2', NOW)).toBe(2_000);
    expect(parseRetryAfter(' 120 ', NOW)).toBe(120_000);
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter('Mon, 23 Nov 2026 12:00:05 GMT', NOW)).toBe(5_000);
    expect(parseRetryAfter('Monday, 23-Nov-26 12:00:05 GMT', NOW)).toBe(5_000);
    expect(parseRetryAfter('Mon Nov 23 12:00:05 2026', NOW)).toBe(5_000); // asctime, GMT too
    expect(parseRetryAfter('Mon, 23 Nov 2026 11:00:00 GMT', NOW)).toBe(0); // past: now
  });

  it.each(['', 'soon', '1.5', '-1', '2s', 'Mon, 99 Foo 2026 GMT'])('ignores %j', (v) => {
    expect(parseRetryAfter(v, NOW)).toBeUndefined();
  });

  it('ignores an absent header', () => {
    expect(parseRetryAfter(null, NOW)).toBeUndefined();
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
  });
});

describe('errors of 429 and 503 answers', () => {
  const answer =
    (status: number, headers: Record<string, string>, body = '{"error":{"code":"unavailable","message":"busy"}}'): FetchLike =>
    async () =>
      new Response(body, { status, headers });

  it('carry the Retry-After as retryAfterMs, HTTP-dates counted from the client clock', async () => {
    const c503 = new FleetplaneClient({ baseUrl: 'http://fleet.test', fetch: answer(503, { 'retry-after': '2' }) });
    const e503 = await c503.devices.get('o', 'd').catch((e: unknown) => e);
    expect(e503).toBeInstanceOf(UnavailableError);
    expect(e503).toMatchObject({ status: 503, retryAfterMs: 2_000 });

    const date = new FleetplaneClient({
      baseUrl: 'http://fleet.test',
      now: () => NOW,
      fetch: answer(429, { 'Retry-After': 'Mon, 23 Nov 2026 12:00:07 GMT' }, '{"error":{"code":"too_many_requests","message":"slow down"}}'),
    });
    expect(await date.devices.get('o', 'd').catch((e: unknown) => e)).toMatchObject({ code: 'too_many_requests', retryAfterMs: 7_000 });

    // A proxy's bare 503 still carries it.
    const bare = new FleetplaneClient({ baseUrl: 'http://fleet.test', fetch: answer(503, { 'retry-after': '4' }, '') });
    expect(await bare.devices.get('o', 'd').catch((e: unknown) => e)).toMatchObject({ code: 'unavailable', retryAfterMs: 4_000 });
  });

  it('leave it undefined without the header, and on other statuses', async () => {
    const none = new FleetplaneClient({ baseUrl: 'http://fleet.test', fetch: answer(503, {}) });
    expect(await none.devices.get('o', 'd').catch((e: unknown) => e)).toMatchObject({ retryAfterMs: undefined });
    const other = new FleetplaneClient({ baseUrl: 'http://fleet.test', fetch: answer(500, { 'retry-after': '2' }, '{"error":{"code":"internal","message":"x"}}') });
    const err = await other.devices.get('o', 'd').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerError);
    expect(err).toMatchObject({ retryAfterMs: undefined });
  });
});

describe('the wait a Retry-After imposes', () => {
  it('is at least the Retry-After and at most half of it more (jitter capped), never less than the backoff draw', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3_600_000 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (ra, r) => {
        const wait = retryAfterWait(ra, () => r);
        const floor = Math.min(ra, MAX_RETRY_AFTER_MS);
        expect(wait).toBeGreaterThanOrEqual(floor);
        expect(wait).toBeLessThanOrEqual(floor + Math.min(floor / 2, MAX_RETRY_AFTER_JITTER_MS));
        const b = new Backoff({ initialMs: 100, maxMs: 1_000 }, () => r);
        const d = b.next(0, ra);
        expect(d).toBeGreaterThanOrEqual(floor);
        expect(d).toBeGreaterThanOrEqual(r * 100);
        expect(b.failures).toBe(1);
      }),
    );
  });

  it('spreads clients told the same moment', () => {
    expect(retryAfterWait(2_000, () => 0)).toBe(2_000);
    expect(retryAfterWait(2_000, () => 0.5)).toBe(2_500);
    expect(retryAfterWait(MAX_RETRY_AFTER_MS * 10, () => 0.5)).toBe(MAX_RETRY_AFTER_MS + MAX_RETRY_AFTER_JITTER_MS / 2);
    // Retry-After: 0 repeated still meets the growing backoff.
    const b = new Backoff({ initialMs: 100, maxMs: 10_000 }, () => 0.5);
    expect([b.next(0, 0), b.next(0, 0), b.next(0, 0)]).toEqual([50, 100, 200]);
  });
});

/** A fetch answering every call 503 with `Retry-After: 2`, counting the calls. */
function overloaded() {
  const calls: string[] = [];
  const fetch: FetchLike = async (url) => {
    calls.push(url);
    return new Response('{"error":{"code":"unavailable","message":"overloaded"}}', {
      status: 503,
      headers: { 'content-type': 'application/json', 'retry-after': '2' },
    });
  };
  return { calls, client: new FleetplaneClient({ baseUrl: 'http://fleet.test', token: 't', fetch }) };
}

async function advanceUntil(cond: () => boolean, stepMs = 1, maxSteps = 200): Promise<void> {
  for (let i = 0; i < maxSteps && !cond(); i++) await vi.advanceTimersByTimeAsync(stepMs);
  expect(cond()).toBe(true);
}

describe('retry loops under Retry-After: 2', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('informers send the next watch no sooner than 2 s after a 503', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { calls, client } = overloaded();
    const statuses: InformerStatus[] = [];
    const shared = new SharedInformers(client, 'org', FAST);
    shared.onStatus((s) => statuses.push(s));
    shared.informer('device');
    shared.start();
    try {
      await advanceUntil(() => calls.length === 1 && statuses.some((s) => s.type === 'retrying'));
      const retrying = statuses.find((s) => s.type === 'retrying');
      expect(retrying).toMatchObject({ type: 'retrying', attempt: 1 });
      // FAST caps the backoff at 20 ms: only the Retry-After holds the next attempt back.
      await vi.advanceTimersByTimeAsync(1_990);
      expect(calls).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(1_020);
      expect(calls).toHaveLength(2);
    } finally {
      await shared.stop();
    }
  });

  it('followConvergence connects again no sooner than 2 s after a 503', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { calls, client } = overloaded();
    const ac = new AbortController();
    const done = (async () => {
      for await (const _ of client.organizations.followConvergence('org', { signal: ac.signal, backoff: { initialMs: 1, maxMs: 20 }, logger: silentLogger })) {
        // nothing comes
      }
    })();
    await advanceUntil(() => calls.length === 1);
    await vi.advanceTimersByTimeAsync(1_990);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1_020);
    expect(calls).toHaveLength(2);
    expect(calls[0]).toBe('http://fleet.test/api/organizations/org/convergence?watch=true');
    ac.abort();
    await done;
  });
});

describe('informers against a server answering 503 with Retry-After', () => {
  let server: FakeFleetServer | undefined;
  afterEach(async () => {
    await server?.close();
  });

  it('report a retry delay of at least the Retry-After', async () => {
    server = await new FakeFleetServer().start();
    server.rejectWatches = 'unavailable';
    server.rejectRetryAfter = '2';
    const client = new FleetplaneClient({ baseUrl: server.url, token: server.token });
    const shared = new SharedInformers(client, server.org, FAST);
    const statuses: InformerStatus[] = [];
    shared.onStatus((s) => statuses.push(s));
    shared.informer('device');
    shared.start();
    try {
      await until(() => statuses.some((s) => s.type === 'retrying'), 'the retry');
      const retrying = statuses.find((s) => s.type === 'retrying');
      if (retrying?.type !== 'retrying') throw new Error('expected retrying');
      expect(retrying.error).toMatchObject({ code: 'unavailable', retryAfterMs: 2_000 });
      expect(retrying.delayMs).toBeGreaterThanOrEqual(2_000);
      expect(retrying.delayMs).toBeLessThanOrEqual(3_000);
    } finally {
      await shared.stop();
    }
  });
});
