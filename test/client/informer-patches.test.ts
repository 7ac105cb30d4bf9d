import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FleetplaneClient, SharedInformers } from '../../src/client/index.js';
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

describe('SharedInformers with patch events', () => {
  it('asks for patches and applies each to the object it holds: handlers see the whole old and new object', async () => {
    server.put('device', { id: 'a', hostname: 'a', endpoints: ['198.51.100.1:41641'] }); // 1
    shared = new SharedInformers(client, server.org, FAST).start();
    const devices = shared.informer('device');
    const updates: unknown[] = [];
    devices.onUpdate((old, now) => updates.push({ old, now }));
    await devices.waitForSync();
    expect(server.watchRequests[0]).toEqual([{ kind: 'device', gt_revision: 0, at_tail: false, patches: true }]);

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
    expect(server.watchRequests[1]).toEqual([{ kind: 'device', gt_revision: 0, at_tail: false, patches: true }]);
    expect(devices.list()).toEqual(server.state('device'));
    // The bad patch changed nothing; the relist brought a4 as an update.
    expect(log).toEqual(['add a@1', 'add b@2', 'update a@1->3', 'update a@3->4']);
  });

  it('watches without patches, for as long as it runs, when the server refuses them', async () => {
    server.refusePatches = true;
    server.put('device', { id: 'a', hostname: 'a' });
    shared = new SharedInformers(client, server.org, FAST).start();
    const devices = shared.informer('device');
    await devices.waitForSync();
    expect(server.watchRequests).toEqual([
      [{ kind: 'device', gt_revision: 0, at_tail: false, patches: true }],
      [{ kind: 'device', gt_revision: 0, at_tail: false }],
    ]);
    server.put('device', { id: 'a', hostname: 'a2' });
    await until(() => devices.revision() === 2, 'changed');
    expect(devices.get('a')).toEqual({ id: 'a', hostname: 'a2', revision: 2 });
    server.cutAll();
    await until(() => server.watchRequests.length === 3, 'resumed');
    expect(server.watchRequests[2]).toEqual([{ kind: 'device', gt_revision: 2, at_tail: true }]);
  });
});
