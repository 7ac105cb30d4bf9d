import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthError,
  CompactedError,
  FleetplaneClient,
  SharedInformers,
  type Informer,
  type InformerErrorContext,
  type WatchKind,
} from '../../src/client/index.js';
import { ChaosProxy, seededRandom } from './support/chaos-proxy.js';
import { randomWrites } from './support/random-writer.js';
import {
  ADMIN_TOKEN,
  byId,
  fastInformers,
  mirror,
  sleep,
  startRealServer,
  uniqueName,
  until,
  wgKey,
  withoutStatus,
  type RealServer,
} from './support/real-server.js';

const BOOKMARK_S = 0.1;
const INFORMER_OPTS = fastInformers(BOOKMARK_S * 1000);

let rs: RealServer;
beforeAll(async () => {
  rs = await startRealServer({ bookmarkInterval: BOOKMARK_S, revocationCheckInterval: 0.1 });
});
afterAll(async () => {
  await rs?.close();
});

/** The organization's head revision (`X-Fleetplane-Revision` of an unpaged list), not the organization object's own. */
async function headOf(org: string): Promise<number> {
  const head = (await rs.admin.securityGroups.list(org)).revision;
  if (head === undefined) throw new Error('an unpaged list without X-Fleetplane-Revision');
  return head;
}

async function compactedRevision(org: string): Promise<number> {
  const rows = await rs.server.db.query<{ compacted_revision: number }>('SELECT compacted_revision FROM orgs WHERE id = $1', [org]);
  return Number(rows[0]?.compacted_revision ?? 0);
}

function informersOf(client: FleetplaneClient, org: string) {
  const shared = new SharedInformers(client, org, INFORMER_OPTS);
  return {
    shared,
    device: shared.informer('device'),
    group: shared.informer('security-group'),
    org: shared.informer('organization'),
  };
}

describe('shared informers through a proxy that cuts connections at random points', () => {
  const SEEDS = [11, 2024, 777];
  const WRITERS = 3;
  const OPS_PER_WRITER = 14;

  it.each(SEEDS)('end with exactly the server state, and their callbacks rebuild it (seed %i)', async (seed) => {
    const org = (await rs.admin.organizations.create({ name: uniqueName('chaos') })).id;
    // Objects from before the informers start: the initial listing gets cut too.
    for (let i = 0; i < 4; i++) await rs.admin.devices.create(org, { hostname: uniqueName('pre'), public_key: wgKey() });
    await rs.admin.securityGroups.create(org, { description: uniqueName('pre-sg') });

    const proxy = await ChaosProxy.start(rs.url, seed);
    const inf = informersOf(new FleetplaneClient({ baseUrl: proxy.url, token: ADMIN_TOKEN }), org);
    const violations: string[] = [];
    const unexpected: string[] = [];
    inf.shared.onError((err, ctx) => {
      if (ctx.source === 'handler' || ctx.fatal) unexpected.push(`${ctx.source}: ${err.name} ${err.message}`);
    });
    const mirrors = { device: mirror(inf.device, violations), group: mirror(inf.group, violations), org: mirror(inf.org, violations) };
    const chaos = { maxBytes: 3_000, maxLifeMs: 250, stalls: true };
    proxy.chaos(chaos);
    inf.shared.start();

    try {
      const random = seededRandom(seed * 7919);
      // Besides the proxy's own cuts, writers cut every stream now and then, so every run has some,
      // and compact away every tombstone, so resumes get revision_compacted and relist under cuts.
      let compactions = 0;
      const between = async (): Promise<void> => {
        const r = random();
        if (r < 0.08) proxy.cutAll();
        else if (r < 0.12) {
          compactions += 1;
          await rs.server.ctx.store.changes.compact(0);
        }
      };
      const phase = () =>
        Promise.all(Array.from({ length: WRITERS }, () => randomWrites(rs.admin, org, { ops: OPS_PER_WRITER / 2, random, between })));
      const applied = await phase();
      // At least one compaction and one silent stream per run, whatever the draws.
      compactions += 1;
      await rs.server.ctx.store.changes.compact(0);
      // Chaos pauses for this: a relist past a fresh compaction needs one connection that carries it to the head.
      proxy.chaos(undefined);
      await until(() => inf.shared.status().type === 'synced' && proxy.open > 0, 'a stream to silence');
      proxy.stallAll();
      proxy.chaos(chaos);
      applied.push(...(await phase()));
      proxy.chaos(undefined);

      const [devList, groupList, current] = await Promise.all([
        rs.admin.devices.list(org),
        rs.admin.securityGroups.list(org),
        rs.admin.organizations.get(org),
      ]);
      const head = devList.revision;
      expect(head).toBeGreaterThanOrEqual(current.revision);
      if (head === undefined) return;
      // Once the stream holds, bookmarks carry every informer to the head.
      await until(
        () => [inf.device, inf.group, inf.org].every((i) => i.revision() >= head) && inf.shared.status().type === 'synced',
        `informers at revision ${head}`,
        30_000,
      );

      expect(unexpected).toEqual([]);
      expect(violations).toEqual([]);
      const expected = { device: byId(devList.items.map(withoutStatus)), group: byId(groupList.items), org: byId([current]) };
      expect(byId(inf.device.list())).toEqual(expected.device);
      expect(byId(inf.group.list())).toEqual(expected.group);
      expect(byId(inf.org.list())).toEqual(expected.org);
      expect(mirrors.device).toEqual(expected.device);
      expect(mirrors.group).toEqual(expected.group);
      expect(mirrors.org).toEqual(expected.org);
      // A real run: writes applied while connections were being cut.
      expect(applied.reduce((a, b) => a + b, 0)).toBeGreaterThan(WRITERS * OPS_PER_WRITER * 0.5);
      expect(proxy.cuts).toBeGreaterThan(0);
      expect(compactions).toBeGreaterThan(0);
    } finally {
      await inf.shared.stop();
      await proxy.close();
    }
  });
});

describe('an informer that fell behind compaction', () => {
  it('gets revision_compacted, relists, and calls back exactly the real differences', async () => {
    const org = (await rs.admin.organizations.create({ name: uniqueName('relist') })).id;
    const label = new Map<string, string>();
    const device = async (name: string): Promise<string> => {
      const d = await rs.admin.devices.create(org, { hostname: name, public_key: wgKey() });
      label.set(d.id, name);
      return d.id;
    };
    const group = async (name: string): Promise<string> => {
      const g = await rs.admin.securityGroups.create(org, { description: name });
      label.set(g.id, name);
      return g.id;
    };
    label.set(org, 'org');
    const [, b, c] = [await device('A'), await device('B'), await device('C'), await device('D')];
    const [, g2, g3] = [await group('G1'), await group('G2'), await group('G3')];

    const proxy = await ChaosProxy.start(rs.url);
    const inf = informersOf(new FleetplaneClient({ baseUrl: proxy.url, token: ADMIN_TOKEN }), org);
    const errors: Array<[Error, InformerErrorContext]> = [];
    inf.shared.onError((err, ctx) => errors.push([err, ctx]));
    try {
      inf.shared.start();
      await inf.shared.waitForSync();
      const synced = await headOf(org);
      await until(() => inf.device.revision() >= synced, 'the informer at the head');
      const calls: string[] = [];
      const name = (o: { id: string }): string => label.get(o.id) ?? `unknown ${o.id}`;
      const log = <K extends WatchKind>(i: Informer<K>): void => {
        i.onAdd((o) => calls.push(`${i.kind} add ${name(o)}`));
        i.onUpdate((_old, o) => calls.push(`${i.kind} update ${name(o)}`));
        i.onDelete((o) => calls.push(`${i.kind} delete ${name(o)}`));
      };
      log(inf.device);
      log(inf.group);
      log(inf.org);

      proxy.hold();
      await until(() => inf.shared.status().type === 'retrying', 'the stream to be down');
      await rs.admin.devices.update(org, b, { hostname: 'B2' });
      await device('E');
      await rs.admin.devices.delete(org, c);
      await rs.admin.securityGroups.update(org, g2, { description: 'G2 renamed' });
      await rs.admin.securityGroups.delete(org, g3);
      await group('G4');
      await rs.admin.organizations.update(org, { description: 'patched' });
      // A PATCH that changes nothing emits nothing, relist or not.
      await rs.admin.securityGroups.update(org, g2, { description: 'G2 renamed' });
      await rs.server.ctx.store.changes.compact(0);
      expect(await compactedRevision(org)).toBeGreaterThan(inf.device.revision());
      expect(calls).toEqual([]);

      const head = await headOf(org);
      proxy.release();
      await until(
        () => inf.shared.status().type === 'synced' && [inf.device, inf.group, inf.org].every((i) => i.revision() >= head),
        'the relist to reach the head',
      );

      expect(calls.filter((c) => c.startsWith('device '))).toEqual(['device update B', 'device add E', 'device delete C']);
      expect(calls.filter((c) => c.startsWith('security-group '))).toEqual([
        'security-group update G2',
        'security-group add G4',
        'security-group delete G3',
      ]);
      expect(calls.filter((c) => c.startsWith('organization '))).toEqual(['organization update org']);
      expect(inf.device.get(b)?.hostname).toBe('B2');
      expect(errors.some(([e, ctx]) => e instanceof CompactedError && e.status === 410 && ctx.source === 'stream' && !ctx.fatal)).toBe(true);
      expect(errors.filter(([, ctx]) => ctx.fatal || ctx.source === 'handler')).toEqual([]);
      expect(byId(inf.device.list())).toEqual(byId((await rs.admin.devices.list(org)).items.map(withoutStatus)));
      expect(byId(inf.group.list())).toEqual(byId((await rs.admin.securityGroups.list(org)).items));
    } finally {
      await inf.shared.stop();
      await proxy.close();
    }
  });
});

describe('an informer that joins a running stream', () => {
  it('syncs its kind while the others emit nothing twice', async () => {
    const org = (await rs.admin.organizations.create({ name: uniqueName('join') })).id;
    await rs.admin.devices.create(org, { hostname: 'early', public_key: wgKey() });
    const g = await rs.admin.securityGroups.create(org, { description: 'g' });
    const proxy = await ChaosProxy.start(rs.url);
    const shared = new SharedInformers(new FleetplaneClient({ baseUrl: proxy.url, token: ADMIN_TOKEN }), org, INFORMER_OPTS);
    try {
      const devices = shared.informer('device');
      const violations: string[] = [];
      const devMirror = mirror(devices, violations);
      shared.start();
      await devices.waitForSync();
      const late = await rs.admin.devices.create(org, { hostname: 'late', public_key: wgKey() });
      await until(() => devices.get(late.id) !== undefined, 'the late device');
      const errors: Error[] = [];
      shared.onError((err) => errors.push(err));

      const groups = shared.informer('security-group');
      const groupMirror = mirror(groups, violations);
      await groups.waitForSync(AbortSignal.timeout(10_000));
      const head = await headOf(org);
      await until(() => devices.revision() >= head && groups.revision() >= head, 'both at the head');

      // One stream for both (the server holds no other watcher now), restarted without an error.
      await until(() => rs.server.watch.watcherCount === 1, 'one watcher on the server');
      expect(errors).toEqual([]);
      expect(violations).toEqual([]);
      expect(byId(groups.list())).toEqual(byId([g]));
      expect(groupMirror).toEqual(byId([g]));
      const expectedDevices = byId((await rs.admin.devices.list(org)).items.map(withoutStatus));
      expect(byId(devices.list())).toEqual(expectedDevices);
      expect(devMirror).toEqual(expectedDevices);
    } finally {
      await shared.stop();
      await proxy.close();
    }
  });
});

describe('an informer whose token stops working', () => {
  async function failedInformer(token: string, org: string, proxy: ChaosProxy) {
    const shared = new SharedInformers(new FleetplaneClient({ baseUrl: proxy.url, token }), org, INFORMER_OPTS);
    const errors: Array<[Error, InformerErrorContext]> = [];
    shared.onError((err, ctx) => errors.push([err, ctx]));
    return { shared, errors, informer: shared.informer('device') };
  }

  /** With 1..25 ms backoff, an informer that kept retrying would open many connections in this time. */
  async function expectNoMoreConnections(proxy: ChaosProxy): Promise<void> {
    const before = proxy.connections;
    await sleep(300);
    expect(proxy.connections).toBe(before);
  }

  it('stops with a 403 when its token is revoked mid-stream', async () => {
    const org = (await rs.admin.organizations.create({ name: uniqueName('revoked') })).id;
    await rs.admin.devices.create(org, { hostname: 'one', public_key: wgKey() });
    const token = await rs.admin.tokens.create(org, { role: 'read', description: 'informer' });
    const proxy = await ChaosProxy.start(rs.url);
    const { shared, errors, informer } = await failedInformer(token.token, org, proxy);
    try {
      shared.start();
      await informer.waitForSync();
      expect(informer.list().map((d) => d.hostname)).toEqual(['one']);

      await rs.admin.tokens.delete(org, token.id);
      await until(() => shared.status().type === 'failed', 'the informers to fail');
      const status = shared.status();
      const error = status.type === 'failed' ? status.error : undefined;
      expect(error).toBeInstanceOf(AuthError);
      expect([(error as AuthError).status, (error as AuthError).code]).toEqual([403, 'forbidden']);
      expect(errors.map(([e, ctx]) => [e.name, ctx])).toEqual([['AuthError', { source: 'stream', fatal: true }]]);
      expect(informer.status().type).toBe('failed');
      // The cache keeps its last state.
      expect(informer.list().map((d) => d.hostname)).toEqual(['one']);
      await expectNoMoreConnections(proxy);
    } finally {
      await shared.stop();
      await proxy.close();
    }
  });

  it('stops with a 401 on a token the server does not know, and waitForSync rejects', async () => {
    const org = (await rs.admin.organizations.create({ name: uniqueName('unknown-token') })).id;
    const token = await rs.admin.tokens.create(org, { role: 'read' });
    await rs.admin.tokens.delete(org, token.id);
    const proxy = await ChaosProxy.start(rs.url);
    const { shared, errors, informer } = await failedInformer(token.token, org, proxy);
    try {
      shared.start();
      const err = await informer.waitForSync(AbortSignal.timeout(10_000)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(AuthError);
      expect([(err as AuthError).status, (err as AuthError).code]).toEqual([401, 'unauthorized']);
      expect(shared.status()).toEqual({ type: 'failed', error: err });
      expect(errors).toEqual([[err, { source: 'stream', fatal: true }]]);
      await expectNoMoreConnections(proxy);
    } finally {
      await shared.stop();
      await proxy.close();
    }
  });
});
