import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { plain } from '../watch/support/client-state.js';
import { startCluster, type Cluster } from './support/cluster.js';
import { followersReach, plainState, seedObjects, startFollowers, writeBurst } from './support/followers.js';
import { advertisedUrl, ensureBuilt, killAllProcesses, printOutputOnFailure } from './support/replica-process.js';
import { createOrg, headRevision, listReplicaRows, type ReplicaRow } from './support/rest.js';
import { emptyRoamStats, eventually, serverState } from './support/roaming.js';

const PG = inject('pgAdminUrl');
const SEED = Number(process.env['SCALEOUT_SEED'] ?? Date.now() % 1_000_000);
const VICTIM = 1;

printOutputOnFailure();

describe.runIf(PG !== '')('kill -9 of a replica in the middle of a write burst', () => {
  let cluster: Cluster | undefined;

  beforeAll(async () => {
    ensureBuilt();
    cluster = await startCluster(PG, 3, ['--replica-lease-ttl', '2']);
  });

  afterAll(async () => {
    await killAllProcesses();
  });

  it(`its watchers resume elsewhere, nothing is lost, its replicas row expires (seed ${SEED})`, async () => {
    const c = cluster;
    if (!c) throw new Error('cluster not started');
    const victim = c.replica(VICTIM);
    const survivor = c.replica(0).url;
    // A 2 s lease can lapse while a loaded machine starts a replica; the next renewal registers it again.
    let rows: ReplicaRow[] = [];
    await eventually(async () => (rows = await listReplicaRows(survivor)).length === 3, 'all three replicas are listed');
    const victimRow = rows.find((r) => r.private_url === advertisedUrl(victim.name));
    expect(victimRow).toBeDefined();

    const org = await createOrg(survivor);
    await seedObjects(c.allUrls(), org);
    const stats = emptyRoamStats();
    let following = true;
    // Followers don't know of the crash either: they try every replica, the dead one included.
    const followers = startFollowers(org, c.allUrls(), 4, () => c.allUrls(), stats, SEED, () => following);
    try {
      await followersReach(followers, await headRevision(survivor, org));

      const total = 3 * 50;
      let killed: Promise<unknown> | undefined;
      const writers = await writeBurst(
        () => c.allUrls(),
        org,
        SEED,
        3,
        total / 3,
        (n) => {
          if (n === Math.floor(total / 3)) killed = victim.stop('SIGKILL');
        },
      );
      expect((await killed) ?? 'not killed').toMatchObject({ signal: 'SIGKILL' });
      expect(writers.flatMap((w) => w.errors)).toEqual([]);
      // Writes were sent to the dead replica, failed, and were answered by another one.
      expect(writers.reduce((n, w) => n + (w.failedSends.get(victim.url) ?? 0), 0)).toBeGreaterThan(0);

      const head = await headRevision(survivor, org);
      await followersReach(followers, head);
      const server = plain(await serverState(survivor, org));
      for (const f of followers) {
        expect(f.client.watch.violations, f.client.name).toEqual([]);
        expect(plainState(f), f.client.name).toEqual(server);
      }
      // The victim's followers lost their streams and resumed on the others.
      const orphans = followers.filter((f) => f.home === victim.url);
      for (const f of orphans) expect(f.client.last, f.client.name).not.toBe(victim.url);
      expect(stats.brokenStreams).toBeGreaterThanOrEqual(orphans.length);
      expect(stats.crossResumes).toBeGreaterThanOrEqual(orphans.length);
      expect(stats.errors).toEqual({});
    } finally {
      following = false;
      await Promise.all(followers.map((f) => f.run));
    }

    // Its lease expires: gone from GET /api/replicas, then collected from the table by the others.
    const victimId = victimRow?.id ?? '';
    await eventually(async () => {
      const live = await listReplicaRows(survivor);
      return !live.some((r) => r.id === victimId) && live.length === 2;
    }, 'the dead replica left GET /api/replicas');
    const sql = postgres(c.databaseUrl, { max: 1, onnotice: () => {} });
    try {
      await eventually(async () => (await sql`SELECT id FROM replicas WHERE id = ${victimId}`).length === 0, 'the dead replica row was deleted');
    } finally {
      await sql.end();
    }
  }, 90_000);
});
