/**
 * snapshot() and seed() against the real server, under concurrent writes:
 * informers seeded from a snapshot taken at any moment end with exactly the
 * server state, including when the snapshot raised a lagging kind's resume
 * point to the revision the kinds agree on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SharedInformers, type FleetplaneClient, type InformersState, type WatchKind } from '../../src/client/index.js';
import { seededRandom } from './support/chaos-proxy.js';
import { randomWrites } from './support/random-writer.js';
import { byId, fastInformers, mirror, startRealServer, uniqueName, until, wgKey, withoutStatus, type RealServer } from './support/real-server.js';

// No bookmark during the test: nothing but the snapshot's own reasoning moves a lagging kind's resume point.
const BOOKMARK_S = 600;
const INFORMER_OPTS = fastInformers(BOOKMARK_S * 1000);
const KINDS: readonly WatchKind[] = ['device', 'security-group', 'organization'];

let rs: RealServer;
beforeAll(async () => {
  rs = await startRealServer({ bookmarkInterval: BOOKMARK_S });
});
afterAll(async () => {
  await rs?.close();
});

function informersOf(client: FleetplaneClient, org: string) {
  const shared = new SharedInformers(client, org, INFORMER_OPTS);
  return { shared, device: shared.informer('device'), group: shared.informer('security-group'), org: shared.informer('organization') };
}

describe('informers seeded from a snapshot taken during writes', () => {
  it('end with exactly the server state', async () => {
    const org = (await rs.admin.organizations.create({ name: uniqueName('seed') })).id;
    for (let i = 0; i < 3; i++) await rs.admin.devices.create(org, { hostname: uniqueName('pre'), public_key: wgKey() });
    await rs.admin.securityGroups.create(org, { description: uniqueName('pre-sg') });

    const source = informersOf(rs.admin, org);
    source.shared.start();
    await source.shared.waitForSync(AbortSignal.timeout(10_000));

    const snapshots: InformersState[] = [];
    let raised = 0;
    const take = (): void => {
      const snap = source.shared.snapshot();
      if (!snap) return;
      const raw: Record<WatchKind, number> = { device: source.device.revision(), 'security-group': source.group.revision(), organization: source.org.revision() };
      if (KINDS.some((k) => (snap[k]?.revision ?? 0) > raw[k])) raised++;
      snapshots.push(JSON.parse(JSON.stringify(snap)) as InformersState);
    };
    const random = seededRandom(4242);
    const between = async (): Promise<void> => {
      if (random() < 0.35) take();
    };
    try {
      await randomWrites(rs.admin, org, { ops: 40, random, between });
      take();
    } finally {
      await source.shared.stop();
    }
    expect(snapshots.length).toBeGreaterThan(3);
    // Some snapshot did move a lagging kind: the case the agreement exists for.
    expect(raised).toBeGreaterThan(0);

    const [devList, groupList, current] = await Promise.all([rs.admin.devices.list(org), rs.admin.securityGroups.list(org), rs.admin.organizations.get(org)]);
    const head = devList.revision ?? 0;
    const expected = { device: byId(devList.items.map(withoutStatus)), group: byId(groupList.items), org: byId([current]) };
    for (const [n, snap] of snapshots.entries()) {
      const seeded = informersOf(rs.admin, org);
      const violations: string[] = [];
      const mirrors = { device: mirror(seeded.device, violations), group: mirror(seeded.group, violations), org: mirror(seeded.org, violations) };
      seeded.shared.seed(snap);
      seeded.shared.start();
      try {
        // Once any kind has seen the head, every kind has: after the tails, events arrive in revision order.
        await until(() => Math.max(seeded.device.revision(), seeded.group.revision(), seeded.org.revision()) >= head, `snapshot ${n} at the head`);
        expect({ n, violations }).toEqual({ n, violations: [] });
        expect(byId(seeded.device.list())).toEqual(expected.device);
        expect(byId(seeded.group.list())).toEqual(expected.group);
        expect(byId(seeded.org.list())).toEqual(expected.org);
        expect(mirrors.device).toEqual(expected.device);
        expect(mirrors.group).toEqual(expected.group);
        expect(mirrors.org).toEqual(expected.org);
      } finally {
        await seeded.shared.stop();
      }
    }
  });
});
