/**
 * SharedInformers.snapshot() and seed(): a state saved by one run resumes
 * the watch of the next, which then gets only what changed meanwhile.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FleetplaneClient, SharedInformers, type InformersState, type WatchKind } from '../../src/client/index.js';
import { FakeFleetServer } from './support/fake-fleet-server.js';
import { FAST, record } from './support/informer-harness.js';
import { until } from './support/wait.js';

const KINDS: readonly WatchKind[] = ['device', 'security-group', 'organization'];

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

/** Revisions 1..5: the organization, devices a b c, group g. */
function populate(): void {
  server.put('organization', { id: server.org, name: 'acme' });
  for (const id of ['a', 'b', 'c']) server.put('device', { id, hostname: id });
  server.put('security-group', { id: 'g' });
}

/** A first run that syncs and stops; its snapshot as it would come back from a file. */
async function savedRun(): Promise<InformersState> {
  const first = new SharedInformers(client, server.org, FAST);
  for (const kind of KINDS) first.informer(kind);
  first.start();
  await first.waitForSync(AbortSignal.timeout(10_000));
  const state = first.snapshot();
  await first.stop();
  expect(state).toBeDefined();
  return JSON.parse(JSON.stringify(state)) as InformersState;
}

/** The second run: informers created and recorded, seeded, not started. */
function seededRun(state: InformersState) {
  shared = new SharedInformers(client, server.org, FAST);
  const devices = shared.informer('device');
  const groups = shared.informer('security-group');
  shared.informer('organization');
  const deviceLog = record(devices);
  const groupLog = record(groups);
  shared.seed(state);
  return { shared, devices, groups, deviceLog, groupLog };
}

describe('SharedInformers seeded from a saved state', () => {
  it('resumes every kind from its saved revision with at_tail, gets only the delta, and reports a delete made while away', async () => {
    populate();
    const state = await savedRun();
    for (const kind of KINDS) expect(state[kind]).toMatchObject({ revision: 5, atTail: true });

    server.remove('device', 'b'); // 6
    server.put('device', { id: 'a', hostname: 'a2' }); // 7
    server.put('device', { id: 'd', hostname: 'd' }); // 8
    const before = server.watchRequests.length;
    const run = seededRun(state);
    // Handlers saw the saved objects as adds, before any request.
    expect(run.deviceLog).toEqual(['add a@2', 'add b@3', 'add c@4']);
    expect(run.groupLog).toEqual(['add g@5']);
    expect(run.devices.revision()).toBe(5);
    expect(server.watchRequests.length).toBe(before);

    run.shared.start();
    await until(() => run.devices.revision() === 8, 'the delta');
    expect(server.watchRequests[before]).toEqual([
      { kind: 'device', gt_revision: 5, at_tail: true, patches: true, gzip: true },
      { kind: 'security-group', gt_revision: 5, at_tail: true, patches: true, gzip: true },
      { kind: 'organization', gt_revision: 5, at_tail: true, patches: true, gzip: true },
    ]);
    expect(run.deviceLog.slice(3)).toEqual(['delete b@6', 'update a@2->7', 'add d@8']);
    expect(run.groupLog).toEqual(['add g@5']);
    expect(run.devices.list()).toEqual(server.state('device'));
    expect(run.shared.status().type).toBe('synced');

    // Synced only once the server confirms the resumed stream (no tail comes with at_tail: a bookmark).
    expect(run.shared.hasSynced()).toBe(false);
    server.bookmark();
    await run.shared.waitForSync(AbortSignal.timeout(10_000));
    expect(run.shared.hasSynced()).toBe(true);
    expect(server.watchRequests.length).toBe(before + 1);
  });

  it('relists after revision_compacted and reports only the real differences', async () => {
    populate();
    const state = await savedRun();
    server.remove('device', 'b'); // 6
    server.put('device', { id: 'a', hostname: 'a2' }); // 7
    server.put('device', { id: 'd', hostname: 'd' }); // 8
    server.compact();
    const before = server.watchRequests.length;
    const run = seededRun(state);
    run.deviceLog.length = 0;
    run.groupLog.length = 0;

    run.shared.start();
    await run.shared.waitForSync(AbortSignal.timeout(10_000));
    expect(server.watchRequests.slice(before)).toEqual([
      [
        { kind: 'device', gt_revision: 5, at_tail: true, patches: true, gzip: true },
        { kind: 'security-group', gt_revision: 5, at_tail: true, patches: true, gzip: true },
        { kind: 'organization', gt_revision: 5, at_tail: true, patches: true, gzip: true },
      ],
      [
        { kind: 'device', gt_revision: 0, at_tail: false, patches: true, gzip: true },
        { kind: 'security-group', gt_revision: 0, at_tail: false, patches: true, gzip: true },
        { kind: 'organization', gt_revision: 0, at_tail: false, patches: true, gzip: true },
      ],
    ]);
    // c and g didn't change: nothing for them. b vanished: reported at the relist's tail with its saved state.
    expect(run.deviceLog).toEqual(['update a@2->7', 'add d@8', 'delete b@3']);
    expect(run.groupLog).toEqual([]);
    expect(run.devices.list()).toEqual(server.state('device'));
  });

  it('snapshot(): none while a kind lists or relists; the kinds agree on the highest revision received in order', async () => {
    populate();
    shared = new SharedInformers(client, server.org, FAST);
    const devices = shared.informer('device');
    const org = shared.informer('organization');
    expect(shared.snapshot()).toBeUndefined();
    shared.start();
    await shared.waitForSync(AbortSignal.timeout(10_000));
    expect(shared.snapshot()).toMatchObject({ device: { revision: 5, atTail: true }, organization: { revision: 5, atTail: true } });

    server.put('device', { id: 'a', hostname: 'a2' }); // 6
    await until(() => devices.revision() === 6, 'the change');
    expect(org.revision()).toBe(5);
    const snap = shared.snapshot();
    // The organization saw everything up to 6 too (all kinds were at their tail), so it resumes from there.
    expect(snap).toMatchObject({ device: { revision: 6 }, organization: { revision: 6 } });
    expect(snap?.device?.objects).toEqual(server.state('device'));
    expect(snap?.organization?.objects).toEqual(server.state('organization'));

    // A relist that can't finish yet: the caches mix two listings, so there is nothing to save.
    server.rejectWatches = 'unavailable';
    server.sendError('revision_compacted');
    await until(() => devices.revision() === 0, 'the relist to begin');
    expect(shared.snapshot()).toBeUndefined();
    server.rejectWatches = undefined;
    await until(() => shared!.snapshot() !== undefined, 'the relist to end');
    expect(shared.snapshot()).toMatchObject({ device: { revision: 6, atTail: true }, organization: { revision: 6, atTail: true } });
  });

  it('seed() refuses a malformed state, and any state once started', () => {
    shared = new SharedInformers(client, server.org, FAST);
    const devices = shared.informer('device');
    const bad: unknown[] = [
      { device: { revision: 1, atTail: true, objects: [{ id: 'a', revision: 2 }] } },
      { device: { revision: 0, atTail: true, objects: [] } },
      { device: { revision: 3, atTail: true, objects: [{ id: 'a', revision: 1 }, { id: 'a', revision: 2 }] } },
      { device: { revision: 3, atTail: 'yes', objects: [] } },
      { devices: { revision: 3, atTail: true, objects: [] } },
      [],
    ];
    for (const state of bad) expect(() => shared!.seed(state as InformersState)).toThrow(TypeError);
    expect(devices.revision()).toBe(0);
    expect(devices.list()).toEqual([]);
    shared.start();
    expect(() => shared!.seed({ device: { revision: 3, atTail: true, objects: [] } })).toThrow(/before start/);
  });
});
