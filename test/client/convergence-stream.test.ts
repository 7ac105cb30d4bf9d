import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AuthError,
  FleetplaneClient,
  NotFoundError,
  ProtocolError,
  UnavailableError,
  parseConvergenceLine,
  type Convergence,
  type ConvergenceRetry,
} from '../../src/client/index.js';
import { FakeFleetServer } from './support/fake-fleet-server.js';
import { silentLogger } from './support/informer-harness.js';
import { until } from './support/wait.js';

let server: FakeFleetServer;
let client: FleetplaneClient;

beforeEach(async () => {
  server = await new FakeFleetServer().start();
  client = new FleetplaneClient({ baseUrl: server.url, token: server.token });
});
afterEach(async () => {
  await server.close();
});

/** Reads values into `into` until the iterator ends or throws; returns what it threw. */
async function drain(it: AsyncIterable<Convergence>, into: Convergence[]): Promise<unknown> {
  try {
    for await (const c of it) into.push(c);
    return undefined;
  } catch (err) {
    return err;
  }
}

describe('parseConvergenceLine', () => {
  const value = { revision: 3, devices: 2, at_head: 1, behind: 1, error: 0, stale: 0, online: 2, not_converged: [] };

  it('parses convergence and error lines', () => {
    expect(parseConvergenceLine(JSON.stringify({ type: 'convergence', value }))).toEqual({ type: 'convergence', value });
    expect(parseConvergenceLine('{"type":"error","value":{"code":"unavailable","message":"bye"}}')).toEqual({
      type: 'error',
      value: { code: 'unavailable', message: 'bye' },
    });
  });

  it.each([
    ['not JSON', 'nope'],
    ['not an object', '[1]'],
    ['unknown type', JSON.stringify({ type: 'bookmark', value: { revision: 1 } })],
    ['a value without its counts', JSON.stringify({ type: 'convergence', value: { revision: 1 } })],
    ['a value without online', JSON.stringify({ type: 'convergence', value: { ...value, online: undefined } })],
    ['a negative count', JSON.stringify({ type: 'convergence', value: { ...value, behind: -1 } })],
    ['an error with an unknown code', '{"type":"error","value":{"code":"what","message":""}}'],
  ])('rejects %s with ProtocolError', (_why, line) => {
    expect(() => parseConvergenceLine(line)).toThrow(ProtocolError);
  });
});

describe('organizations.watchConvergence', () => {
  it('yields the current value at once, then each change; abort ends it quietly and closes the connection', async () => {
    server.convergence.value = { ...server.convergence.value, revision: 5, devices: 3, online: 1 };
    const ac = new AbortController();
    const seen: Convergence[] = [];
    let opened = 0;
    const done = drain(client.organizations.watchConvergence(server.org, { signal: ac.signal, onOpen: () => opened++ }), seen);
    await until(() => seen.length === 1, 'the first value');
    server.convergence.set({ at_head: 3, online: 3 });
    await until(() => seen.length === 2, 'the change');
    ac.abort();
    expect(await done).toBeUndefined();
    expect(opened).toBe(1);
    expect(seen.map((c) => [c.revision, c.devices, c.at_head, c.online])).toEqual([
      [5, 3, 0, 1],
      [5, 3, 3, 3],
    ]);
    await until(() => server.convergence.watchers.size === 0, 'the server saw the close');
    expect(server.requests.at(-1)).toMatchObject({ method: 'GET', url: `/api/organizations/${server.org}/convergence?watch=true` });
  });

  it('throws the error line as its typed error', async () => {
    const seen: Convergence[] = [];
    const first = drain(client.organizations.watchConvergence(server.org), seen);
    await until(() => seen.length === 1, 'the first value');
    server.convergence.end('unavailable', 'shutting down');
    expect(await first).toMatchObject({ name: 'UnavailableError', code: 'unavailable', message: 'shutting down' });

    const second = drain(client.organizations.watchConvergence(server.org), seen);
    await until(() => seen.length === 2, 'the value of the second stream');
    server.convergence.end('forbidden');
    expect(await second).toBeInstanceOf(AuthError);
  });

  it('throws on a line it cannot parse instead of skipping it', async () => {
    const seen: Convergence[] = [];
    const done = drain(client.organizations.watchConvergence(server.org), seen);
    await until(() => seen.length === 1, 'the first value');
    server.convergence.raw('{"type":"convergence","value":{"revision":7}}\n');
    server.convergence.set({ revision: 8 });
    const err = await done;
    expect(err).toBeInstanceOf(ProtocolError);
    expect(err).toMatchObject({ code: 'invalid_response' });
    expect(seen).toHaveLength(1);
  });

  it('fails with ProtocolError when the server answers a plain value instead of the stream (a server without it)', async () => {
    server.convergence.withoutWatch = true;
    const err = await drain(client.organizations.watchConvergence(server.org), []);
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as Error).message).toMatch(/stream=watch/);
  });

  it('throws the typed error of a refused request, with its Retry-After', async () => {
    server.convergence.reject = ['unavailable'];
    server.convergence.retryAfter = '3';
    const err = await drain(client.organizations.watchConvergence(server.org), []);
    expect(err).toBeInstanceOf(UnavailableError);
    expect(err).toMatchObject({ status: 503, retryAfterMs: 3_000 });
    expect(await drain(client.organizations.watchConvergence('00000000-0000-4000-8000-000000000000'), [])).toBeInstanceOf(NotFoundError);
  });

  it('keeps organizations.convergence and client.convergence answering the plain value', async () => {
    server.convergence.value = { ...server.convergence.value, revision: 9 };
    expect(await client.organizations.convergence(server.org)).toMatchObject({ revision: 9 });
    expect(await client.convergence(server.org)).toMatchObject({ revision: 9 });
  });
});

describe('organizations.followConvergence', () => {
  const FAST = { backoff: { initialMs: 1, maxMs: 20 }, logger: silentLogger };

  it('reconnects after a cut, an unavailable line, a refused request and an unparsable line, reporting each', async () => {
    const ac = new AbortController();
    const retries: ConvergenceRetry[] = [];
    const seen: Convergence[] = [];
    const done = drain(
      client.organizations.followConvergence(server.org, { ...FAST, signal: ac.signal, bookmarkIntervalMs: 1_000, onRetry: (r) => retries.push(r) }),
      seen,
    );
    await until(() => seen.length === 1, 'the first value');
    server.convergence.cut();
    await until(() => seen.length === 2, 'the value after the cut');
    server.convergence.reject = ['too_many_requests'];
    server.convergence.end('unavailable');
    await until(() => seen.length === 3, 'the value after the unavailable line and the 429');
    server.convergence.raw('not json\n');
    await until(() => seen.length === 4, 'the value after the unparsable line');
    expect(server.convergence.watchRequests).toBe(5);
    expect(retries.map((r) => r.error.name)).toEqual(['TransportError', 'UnavailableError', 'UnavailableError', 'ProtocolError']);
    // Consecutive failures count on until a connection stays healthy for the backoff's reset time (a minute).
    expect(retries.map((r) => r.attempt)).toEqual([1, 2, 3, 4]);
    ac.abort();
    expect(await done).toBeUndefined();
  });

  it('treats a stream silent for 3 bookmark intervals as dead and reconnects', async () => {
    const ac = new AbortController();
    const retries: ConvergenceRetry[] = [];
    const seen: Convergence[] = [];
    const done = drain(
      client.organizations.followConvergence(server.org, { ...FAST, signal: ac.signal, bookmarkIntervalMs: 20, onRetry: (r) => retries.push(r) }),
      seen,
    );
    await until(() => seen.length >= 2, 'a value from a second connection');
    expect(retries[0]?.error).toMatchObject({ code: 'stream_idle' });
    ac.abort();
    expect(await done).toBeUndefined();
  });

  it('waits at least the Retry-After of a 503, and ends quietly when aborted during the wait', async () => {
    server.convergence.reject = ['unavailable'];
    server.convergence.retryAfter = '2';
    const ac = new AbortController();
    const retries: ConvergenceRetry[] = [];
    const done = drain(client.organizations.followConvergence(server.org, { ...FAST, signal: ac.signal, onRetry: (r) => retries.push(r) }), []);
    await until(() => retries.length === 1, 'the retry');
    // The backoff alone is capped at 20 ms here: only the Retry-After (plus up to half of it as jitter) makes it longer.
    expect(retries[0]!.delayMs).toBeGreaterThanOrEqual(2_000);
    expect(retries[0]!.delayMs).toBeLessThanOrEqual(3_000);
    ac.abort();
    expect(await done).toBeUndefined();
    expect(server.convergence.watchRequests).toBe(1);
  });

  it('stops for good on 401/403/404', async () => {
    const ac = new AbortController();
    server.convergence.reject = ['forbidden'];
    expect(await drain(client.organizations.followConvergence(server.org, { ...FAST, signal: ac.signal }), [])).toBeInstanceOf(AuthError);
    expect(
      await drain(client.organizations.followConvergence('00000000-0000-4000-8000-000000000000', { ...FAST, signal: ac.signal }), []),
    ).toBeInstanceOf(NotFoundError);
    const seen: Convergence[] = [];
    const revoked = drain(client.organizations.followConvergence(server.org, { ...FAST, signal: ac.signal }), seen);
    await until(() => seen.length === 1, 'the first value');
    server.convergence.end('forbidden');
    expect(await revoked).toBeInstanceOf(AuthError);
    expect(server.convergence.watchRequests).toBe(2);
  });
});
