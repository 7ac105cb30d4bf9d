import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WATCH_KINDS } from '../../src/protocol/index.js';
import {
  AuthError,
  FleetplaneClient,
  NotFoundError,
  SharedInformers,
  type InformerStatus,
} from '../../src/client/index.js';
import { ObjectCache } from '../../src/client/informer-cache.js';
import { FakeFleetServer } from './support/fake-fleet-server.js';
import { FAST, record } from './support/informer-harness.js';
import { until } from './support/wait.js';

let server: FakeFleetServer;
let client: FleetplaneClient;
let shared: SharedInformers | undefined;

beforeEach(async () => {
  server = await new FakeFleetServer().start();
  client = new FleetplaneClient({ baseUrl: server.url, token: server.token });
});
afterEach(async () => {
  await shared?.stop();
  shared = undefined;
  await server.close();
});

function statuses(s: SharedInformers): InformerStatus[] {
  const seen: InformerStatus[] = [];
  s.onStatus((st) => seen.push(st));
  return seen;
}

describe('ObjectCache', () => {
  it('applies only newer revisions and reports the delta', () => {
    const c = new ObjectCache<{ id: string; revision: number; v: string }>();
    expect(c.applyChange({ id: 'a', revision: 2, v: 'x' })).toEqual({ type: 'add', object: { id: 'a', revision: 2, v: 'x' } });
    expect(c.applyChange({ id: 'a', revision: 2, v: 'same rev' })).toBeUndefined();
    expect(c.applyChange({ id: 'a', revision: 1, v: 'older' })).toBeUndefined();
    expect(c.applyDelete({ id: 'a', revision: 2, v: 'x' })).toBeUndefined();
    expect(c.applyChange({ id: 'a', revision: 3, v: 'y' })).toMatchObject({ type: 'update', old: { v: 'x' }, object: { v: 'y' } });
    expect(c.applyDelete({ id: 'a', revision: 4, v: 'y' })).toMatchObject({ type: 'delete', object: { revision: 4 } });
    expect(c.applyDelete({ id: 'zz', revision: 9, v: '' })).toBeUndefined();
    expect(c.size).toBe(0);
  });
});

describe('SharedInformers', () => {
  it('waits for every kind with one listener on the caller\'s signal, and none left after', async () => {
    shared = new SharedInformers(client, server.org, FAST);
    for (const kind of WATCH_KINDS) shared.informer(kind);
    const stop = new AbortController();
    const waiting = shared.waitForSync(stop.signal);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(1);
    shared.start();
    await waiting;
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
    // Aborted before the sync: it rejects with the signal's reason, and leaves nothing on the signal.
    const other = new SharedInformers(client, server.org, FAST);
    other.informer('device');
    const gone = new AbortController();
    const cut = other.waitForSync(gone.signal);
    gone.abort(new Error('stopping'));
    await expect(cut).rejects.toThrow('stopping');
    expect(getEventListeners(gone.signal, 'abort')).toHaveLength(0);
    await other.stop();
  });

  it('syncs, then follows adds, updates and deletes', async () => {
    server.put('device', { id: 'a', hostname: 'a' });
    server.put('device', { id: 'b', hostname: 'b' });
    shared = new SharedInformers(client, server.org, FAST);
    const devices = shared.informer('device');
    const log = record(devices);
    expect(devices.hasSynced()).toBe(false);
    expect(shared.status().type).toBe('starting');
    shared.start();
    await devices.waitForSync();
    expect(log).toEqual(['add a@1', 'add b@2']);
    expect(shared.status().type).toBe('synced');
    expect(devices.revision()).toBe(2);

    server.put('device', { id: 'a', hostname: 'a2' });
    server.remove('device', 'b');
    await until(() => devices.revision() === server.head, 'changes');
    expect(log.slice(2)).toEqual(['update a@1->3', 'delete b@4']);
    expect(devices.list()).toEqual(server.state('device'));
    expect(devices.get('a')?.hostname).toBe('a2');
    await shared.stop();
    expect(shared.status().type).toBe('stopped');
  });

  it('drops events not newer than what it has (replays, stale lines)', async () => {
    server.put('device', { id: 'a', hostname: 'a' });
    server.put('device', { id: 'a', hostname: 'a2' });
    shared = new SharedInformers(client, server.org, FAST).start();
    const devices = shared.informer('device');
    const log = record(devices);
    await devices.waitForSync();
    const stale = (id: string, revision: number) => `${JSON.stringify({ kind: 'device', type: 'change', value: { id, revision, hostname: 'stale' } })}\n`;
    server.sendRaw(stale('a', 1) + stale('a', 2) + stale('z', 2));
    server.sendRaw(`${JSON.stringify({ kind: 'device', type: 'delete', value: { id: 'a', revision: 2 } })}\n`);
    server.put('device', { id: 'a', hostname: 'a3' });
    await until(() => devices.revision() === 3, 'the real change');
    expect(log).toEqual(['add a@2', 'update a@2->3']);
    expect(devices.list()).toEqual(server.state('device'));
  });

  it('resumes after a cut from its last revision with at_tail, without duplicates', async () => {
    server.put('device', { id: 'a' });
    shared = new SharedInformers(client, server.org, FAST).start();
    const seen = statuses(shared);
    const devices = shared.informer('device');
    const log = record(devices);
    await devices.waitForSync();
    server.put('security-group', { id: 'g' }); // moves the head without a device event
    server.bookmark();
    await until(() => devices.revision() === 2, 'bookmark moves the resume point');
    server.cutAll();
    server.put('device', { id: 'b' });
    server.put('device', { id: 'a', hostname: 'x' });
    await until(() => devices.list().length === 2 && devices.get('a')?.hostname === 'x', 'resume');
    expect(server.watchRequests[1]).toEqual([{ kind: 'device', gt_revision: 2, at_tail: true, patches: true, gzip: true }]);
    expect(log).toEqual(['add a@1', 'add b@3', 'update a@1->4']);
    expect(seen.map((s) => s.type)).toContain('retrying');
    await until(() => shared!.status().type === 'synced', 'synced again');
  });

  it('relists on revision_compacted and emits exactly the real differences, deletes after the tail', async () => {
    for (const id of ['a', 'b', 'c', 'e']) server.put('device', { id, hostname: id });
    shared = new SharedInformers(client, server.org, FAST).start();
    const devices = shared.informer('device');
    const log = record(devices);
    const revisionAtDelete: number[] = [];
    devices.onDelete(() => revisionAtDelete.push(devices.revision()));
    await devices.waitForSync();
    log.length = 0;

    server.rejectWatches = 'unavailable';
    server.cutAll();
    await until(() => shared!.status().type === 'retrying', 'retrying');
    server.put('device', { id: 'a', hostname: 'a2' }); // 5
    server.remove('device', 'b'); // 6
    server.remove('device', 'e'); // 7
    server.put('device', { id: 'd', hostname: 'd' }); // 8
    server.compact();
    const before = server.watchRequests.length;
    server.rejectWatches = undefined;

    await until(() => devices.revision() === server.head && shared!.status().type === 'synced', 'relisted');
    // A vanished object is reported with its last known state: the relist can't know when it went.
    expect(log).toEqual(['update a@1->5', 'add d@8', 'delete b@2', 'delete e@4']);
    expect(revisionAtDelete).toEqual([8, 8]);
    expect(devices.list()).toEqual(server.state('device'));
    const after = server.watchRequests.slice(before);
    expect(after[0]).toEqual([{ kind: 'device', gt_revision: 4, at_tail: true, patches: true, gzip: true }]);
    expect(after.at(-1)).toEqual([{ kind: 'device', gt_revision: 0, at_tail: false, patches: true, gzip: true }]);
  });

  it('a relist that finds nothing changed calls nothing (error event mid-stream)', async () => {
    for (const id of ['a', 'b']) server.put('device', { id });
    shared = new SharedInformers(client, server.org, FAST).start();
    const devices = shared.informer('device');
    const log = record(devices);
    const errors: string[] = [];
    shared.onError((e, ctx) => errors.push(`${e.name}:${ctx.source}:${String(ctx.fatal)}`));
    await devices.waitForSync();
    server.sendError('revision_compacted');
    await until(() => server.watchRequests.length === 2 && shared!.status().type === 'synced', 'relisted');
    expect(server.watchRequests[1]).toEqual([{ kind: 'device', gt_revision: 0, at_tail: false, patches: true, gzip: true }]);
    expect(log).toEqual(['add a@1', 'add b@2']);
    expect(errors).toEqual(['CompactedError:stream:false']);
    server.put('device', { id: 'c' });
    await until(() => log.length === 3, 'follows after relist');
    expect(log[2]).toBe('add c@3');
  });

  it('joins a new informer onto the one stream without replaying to the others', async () => {
    server.lowestRevisionForAll = true; // the server replays devices too: the device informer must drop them
    server.put('device', { id: 'a' });
    server.put('device', { id: 'b' });
    server.put('security-group', { id: 'g1' });
    shared = new SharedInformers(client, server.org, FAST).start();
    const devices = shared.informer('device');
    const deviceLog = record(devices);
    await devices.waitForSync();
    server.put('device', { id: 'c' });
    server.remove('device', 'b');
    await until(() => deviceLog.length === 4, 'c and b');

    const groups = shared.informer('security-group');
    expect(shared.informer('security-group')).toBe(groups);
    const groupLog = record(groups);
    await groups.waitForSync();
    expect(server.watchRequests.at(-1)).toEqual([
      { kind: 'device', gt_revision: 5, at_tail: true, patches: true, gzip: true },
      { kind: 'security-group', gt_revision: 0, at_tail: false, patches: true, gzip: true },
    ]);
    expect(groupLog).toEqual(['add g1@3']);
    expect(deviceLog).toEqual(['add a@1', 'add b@2', 'add c@4', 'delete b@5']);
    expect(server.watchers.size).toBe(1);

    server.put('device', { id: 'd' });
    server.put('security-group', { id: 'g2' });
    await until(() => groupLog.length === 2 && deviceLog.length === 5, 'both follow');
    expect(deviceLog[4]).toBe('add d@6');
    expect(groupLog[1]).toBe('add g2@7');
    expect(shared.status().type).toBe('synced');
  });

  it('treats a stream without bookmarks for 3 intervals as dead and reconnects', async () => {
    shared = new SharedInformers(client, server.org, { ...FAST, bookmarkIntervalMs: 100 }).start();
    const errors: string[] = [];
    shared.onError((e) => errors.push(`${e.name}:${(e as { code?: string }).code}`));
    const devices = shared.informer('device');
    await devices.waitForSync();
    server.freezeAll();
    await until(() => server.watchRequests.length >= 2, 'reconnect');
    expect(errors[0]).toBe('TransportError:stream_idle');
    server.put('device', { id: 'a' });
    await until(() => devices.list().length === 1, 'follows on the new stream');
  });

  it('retries retryable failures with growing attempts, then syncs', async () => {
    server.rejectWatches = 'unavailable';
    shared = new SharedInformers(client, server.org, FAST).start();
    const seen = statuses(shared);
    const devices = shared.informer('device');
    await until(() => server.watchRequests.length >= 3, 'retries');
    server.rejectWatches = undefined;
    await devices.waitForSync();
    const attempts = seen.flatMap((s) => (s.type === 'retrying' ? [s.attempt] : []));
    expect(attempts.slice(0, 3)).toEqual([1, 2, 3]);
    expect(seen.find((s) => s.type === 'retrying')).toMatchObject({ error: { name: 'UnavailableError', status: 503 } });
    expect(seen.at(-1)?.type).toBe('synced');
  });

  it.each([
    ['401', () => new FleetplaneClient({ baseUrl: server.url, token: 'wrong' }), () => server.org, AuthError],
    ['404', () => client, () => '00000000-0000-4000-8000-000000000000', NotFoundError],
  ])('stops for good on %s and reports it', async (_s, makeClient, org, cls) => {
    shared = new SharedInformers(makeClient(), org(), FAST);
    const fatal: unknown[] = [];
    shared.onError((e, ctx) => {
      if (ctx.source === 'stream' && ctx.fatal) fatal.push(e);
    });
    const devices = shared.informer('device');
    const changes = devices.changes();
    shared.start();
    await expect(devices.waitForSync()).rejects.toBeInstanceOf(cls);
    expect(shared.status()).toMatchObject({ type: 'failed', error: expect.any(cls) });
    expect(fatal).toHaveLength(1);
    expect((await changes.next()).done).toBe(true);
    const requests = server.watchRequests.length;
    await new Promise((r) => setTimeout(r, 50));
    expect(server.watchRequests.length).toBe(requests);
  });

  it('reports a throwing handler and goes on', async () => {
    shared = new SharedInformers(client, server.org, FAST).start();
    const devices = shared.informer('device');
    const errors: string[] = [];
    shared.onError((e, ctx) => errors.push(`${e.message}:${ctx.source}`));
    devices.onAdd(() => {
      throw new Error('handler bug');
    });
    const log = record(devices);
    await devices.waitForSync();
    server.put('device', { id: 'a' });
    server.put('device', { id: 'b' });
    await until(() => log.length === 2, 'both adds');
    expect(errors).toEqual(['handler bug:handler', 'handler bug:handler']);
  });

  it('changes() coalesces bursts; list() after the last wake-up is the server state', async () => {
    shared = new SharedInformers(client, server.org, FAST).start();
    const devices = shared.informer('device');
    await devices.waitForSync();
    const ac = new AbortController();
    let wakeUps = 0;
    const consumer = (async () => {
      for await (const _ of devices.changes(ac.signal)) {
        wakeUps += 1;
        if (devices.list().length === 50) ac.abort();
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    for (let i = 0; i < 50; i++) server.put('device', { id: `d${i}` });
    await consumer;
    expect(wakeUps).toBeGreaterThanOrEqual(1);
    expect(wakeUps).toBeLessThan(50);
    expect(devices.list()).toEqual(server.state('device'));
  });
});

describe('SharedInformers with patch events', () => {
  it('asks for patches and applies each to the object it holds: handlers see the whole old and new object', async () => {
    server.put('device', { id: 'a', hostname: 'a', endpoints: ['198.51.100.1:41641'] }); // 1
    shared = new SharedInformers(client, server.org, FAST).start();
    const devices = shared.informer('device');
    const updates: unknown[] = [];
    devices.onUpdate((old, now) => updates.push({ old, now }));
    await devices.waitForSync();
    expect(server.watchRequests[0]).toEqual([{ kind: 'device', gt_revision: 0, at_tail: false, patches: true, gzip: true }]);

    server.put('device', { id: 'a', endpoints: ['203.0.113.7:50000'] }); // 2, sent as a patch
    await until(() => devices.revision() === 2, 'patched');
    expect(devices.get('a')).toEqual({ id: 'a', hostname: 'a', endpoints: ['203.0.113.7:50000'], revision: 2 });
    expect(updates).toEqual([
      {
        old: { id: 'a', hostname: 'a', endpoints: ['198.51.100.1:41641'], revision: 1 },
        now: { id: 'a', hostname: 'a', endpoints: ['203.0.113.7:50000'], revision: 2 },
      },
    ]);
    expect(devices.list()).toEqual(server.state('device'));
  });

  it('lists again when a patch is for a revision it does not hold, and ends with the server state', async () => {
    server.put('device', { id: 'a', hostname: 'a' }); // 1
    server.put('device', { id: 'b', hostname: 'b' }); // 2
    shared = new SharedInformers(client, server.org, FAST).start();
    const devices = shared.informer('device');
    const log = record(devices);
    const errors: string[] = [];
    shared.onError((e, ctx) => errors.push(`${e.name}:${ctx.source}:${String(ctx.fatal)}`));
    await devices.waitForSync();

    // The server moves a to 3; the line claims a patch from revision 2, which the client never held for a.
    server.put('device', { id: 'a', hostname: 'a3' });
    await until(() => devices.revision() === 3, 'change 3');
    server.head++;
    server.live.get('device')!.set('a', { id: 'a', hostname: 'a4', revision: server.head });
    server.sendRaw(`${JSON.stringify({ kind: 'device', type: 'patch', value: { revision: 4, from_revision: 2, id: 'a', set: { hostname: 'a4' } } })}\n`);

    await until(() => server.watchRequests.length >= 2 && shared!.status().type === 'synced' && devices.revision() === 4, 'relisted');
    expect(errors).toEqual(['PatchBaseError:stream:false']);
    expect(server.watchRequests[1]).toEqual([{ kind: 'device', gt_revision: 0, at_tail: false, patches: true, gzip: true }]);
    expect(devices.list()).toEqual(server.state('device'));
    // The bad patch changed nothing; the relist brought a4 as an update.
    expect(log).toEqual(['add a@1', 'add b@2', 'update a@1->3', 'update a@3->4']);
  });

  // A server from before patches refuses both; one from before gzip (v1.11 to v1.13) only gzip.
  it.each([
    { server: 'before patches', refuse: 'refusePatches', kept: {} },
    { server: 'before gzip', refuse: 'refuseGzip', kept: { patches: true } },
  ] as const)('watches with only what a server from $server takes, for as long as it runs', async ({ refuse, kept }) => {
    server[refuse] = true;
    server.put('device', { id: 'a', hostname: 'a' });
    shared = new SharedInformers(client, server.org, FAST).start();
    const devices = shared.informer('device');
    await devices.waitForSync();
    const asked = server.watchRequests.length;
    expect(server.watchRequests[0]).toEqual([{ kind: 'device', gt_revision: 0, at_tail: false, patches: true, gzip: true }]);
    // Newest first: without gzip, then (if still refused) without patches too.
    expect(server.watchRequests.at(-1)).toEqual([{ kind: 'device', gt_revision: 0, at_tail: false, ...kept }]);
    expect(asked).toBe(refuse === 'refusePatches' ? 3 : 2);
    server.put('device', { id: 'a', hostname: 'a2' });
    await until(() => devices.revision() === 2, 'changed');
    expect(devices.get('a')).toEqual({ id: 'a', hostname: 'a2', revision: 2 });
    server.cutAll();
    await until(() => server.watchRequests.length === asked + 1, 'resumed');
    expect(server.watchRequests[asked]).toEqual([{ kind: 'device', gt_revision: 2, at_tail: true, ...kept }]);
  });
});
