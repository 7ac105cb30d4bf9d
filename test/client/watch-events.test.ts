import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AuthError,
  CompactedError,
  FleetplaneClient,
  ProtocolError,
  TransportError,
  type StreamEvent,
} from '../../src/client/index.js';
import { FakeFleetServer } from './support/fake-fleet-server.js';
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

/** Reads events into `into` until the iterator ends or throws; returns what it threw. */
async function drain(it: AsyncIterable<StreamEvent>, into: StreamEvent[]): Promise<unknown> {
  try {
    for await (const e of it) into.push(e);
    return undefined;
  } catch (err) {
    return err;
  }
}

describe('watchEvents', () => {
  it('delivers nothing after its signal aborts, not even lines it has already read', async () => {
    for (let i = 0; i < 5; i++) server.put('device', { hostname: `d${i}` });
    const ac = new AbortController();
    const events = client.watchEvents(server.org, [{ kind: 'device' }], { signal: ac.signal });
    const first = await events.next();
    expect(first.done).toBe(false);
    // The list came in one write: the four lines after the first are read and waiting.
    ac.abort();
    expect(await events.next()).toEqual({ done: true, value: undefined });
  });

  it('yields the initial list, the tail, then changes, deletes and bookmarks as typed events', async () => {
    const a = server.put('device', { hostname: 'a' });
    server.put('security-group', { description: 'g' });
    const ac = new AbortController();
    const events: StreamEvent[] = [];
    let opened = 0;
    const done = drain(client.watchEvents(server.org, [{ kind: 'device' }], { signal: ac.signal, onOpen: () => opened++ }), events);
    await until(() => events.length === 2, 'initial list');
    server.put('device', { id: a.id, hostname: 'a2' });
    server.remove('device', a.id);
    server.bookmark();
    await until(() => events.length === 5, 'follow');
    ac.abort();
    expect(await done).toBeUndefined();
    expect(opened).toBe(1);
    expect(events.map((e) => (e.type === 'bookmark' ? `bookmark@${e.value.revision}` : `${e.kind}:${e.type}@${e.value.revision}`))).toEqual([
      'device:change@1',
      'device:tail@2',
      'device:change@3',
      'device:delete@4',
      'bookmark@4',
    ]);
    const change = events[2]!;
    if (change.type !== 'change' || change.kind !== 'device') throw new Error('expected a device change');
    expect(change.value.hostname).toBe('a2');
  });

  it('ends quietly on abort and closes the connection', async () => {
    const ac = new AbortController();
    const done = drain(client.watchEvents(server.org, [{ kind: 'device' }], { signal: ac.signal }), []);
    await until(() => server.watchers.size === 1, 'connected');
    ac.abort();
    expect(await done).toBeUndefined();
    await until(() => server.watchers.size === 0, 'server saw the close');
  });

  it('throws a server error event as its typed error', async () => {
    const events: StreamEvent[] = [];
    const done = drain(client.watchEvents(server.org, [{ kind: 'device', gt_revision: 0 }]), events);
    await until(() => events.length === 1, 'tail');
    server.sendError('revision_compacted', 'too old');
    const err = await done;
    expect(err).toBeInstanceOf(CompactedError);
    expect(err).toMatchObject({ code: 'revision_compacted', status: 410, message: 'too old' });
  });

  it('maps a revoked token (forbidden event) to AuthError', async () => {
    const events: StreamEvent[] = [];
    const done = drain(client.watchEvents(server.org, [{ kind: 'device' }]), events);
    await until(() => events.length === 1, 'tail');
    server.sendError('forbidden');
    expect(await done).toBeInstanceOf(AuthError);
  });

  it('throws on a line it cannot parse instead of skipping it', async () => {
    const events: StreamEvent[] = [];
    const done = drain(client.watchEvents(server.org, [{ kind: 'device' }]), events);
    await until(() => events.length === 1, 'tail');
    server.sendRaw('{"kind":"device","type":"change","value":{"id":"x"}}\n');
    server.put('device', { hostname: 'after' });
    server.sendError('unavailable');
    const err = await done;
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as ProtocolError).message).toContain('without id and revision');
    expect(events).toHaveLength(1);
  });

  it.each([
    ['not JSON', 'garbage\n'],
    ['unknown type', '{"type":"surprise","value":{}}\n'],
    ['unknown kind', '{"kind":"planet","type":"tail","value":{"revision":1}}\n'],
    ['unknown error code', '{"type":"error","value":{"code":"nope","message":"x"}}\n'],
  ])('rejects a line with %s', async (_why, line) => {
    const events: StreamEvent[] = [];
    const done = drain(client.watchEvents(server.org, [{ kind: 'device' }]), events);
    await until(() => events.length === 1, 'tail');
    server.sendRaw(line);
    server.sendError('unavailable'); // what a client that skipped the line would see instead
    expect(await done).toBeInstanceOf(ProtocolError);
  });

  it('bounds the line buffer', async () => {
    const events: StreamEvent[] = [];
    const done = drain(client.watchEvents(server.org, [{ kind: 'device' }], { maxLineBytes: 1024 }), events);
    await until(() => events.length === 1, 'tail');
    server.sendRaw('x'.repeat(4096));
    expect(await done).toMatchObject({ code: 'line_too_long' });
  });

  it('answers 410 at connect with CompactedError and 401 with AuthError', async () => {
    server.put('device', { hostname: 'a' });
    server.put('device', { hostname: 'b' });
    server.compact(2);
    expect(await drain(client.watchEvents(server.org, [{ kind: 'device', gt_revision: 1, at_tail: true }]), [])).toBeInstanceOf(CompactedError);
    const bad = new FleetplaneClient({ baseUrl: server.url, token: 'wrong' });
    expect(await drain(bad.watchEvents(server.org, [{ kind: 'device' }]), [])).toMatchObject({ name: 'AuthError', status: 401 });
  });

  it('reports a cut connection as TransportError with the cause', async () => {
    const events: StreamEvent[] = [];
    const done = drain(client.watchEvents(server.org, [{ kind: 'device' }]), events);
    await until(() => events.length === 1, 'tail');
    server.cutAll();
    const err = await done;
    expect(err).toBeInstanceOf(TransportError);
    expect((err as TransportError).code).toBe('network_error');
    expect((err as TransportError).cause).toBeDefined();
  });

  it('declares a silent stream dead after the idle timeout', async () => {
    const events: StreamEvent[] = [];
    const done = drain(client.watchEvents(server.org, [{ kind: 'device' }], { idleTimeoutMs: 400 }), events);
    await until(() => events.length === 1, 'tail');
    server.freezeAll();
    expect(await done).toMatchObject({ name: 'TransportError', code: 'stream_idle' });
  });

  it('keeps a stream with regular bookmarks alive past the idle timeout', async () => {
    const ac = new AbortController();
    const events: StreamEvent[] = [];
    const done = drain(client.watchEvents(server.org, [{ kind: 'device' }], { idleTimeoutMs: 400, signal: ac.signal }), events);
    await until(() => events.length === 1, 'tail');
    const ticker = setInterval(() => server.bookmark(), 40);
    try {
      await until(() => events.length >= 25, '25 bookmarks (about 1 s, 2.5 idle timeouts)');
    } finally {
      clearInterval(ticker);
    }
    ac.abort();
    expect(await done).toBeUndefined();
    expect(server.watchRequests).toHaveLength(1);
  });
});
