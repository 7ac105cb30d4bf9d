import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { plain } from '../watch/support/client-state.js';
import { startCluster, type Cluster } from './support/cluster.js';
import { followersReach, followersSee, plainState, seedObjects, startFollowers, writeBurst, type Follower } from './support/followers.js';
import { scrape, type Scrape } from './support/metrics.js';
import { ensureBuilt, killAllProcesses, printOutputOnFailure } from './support/replica-process.js';
import { createOrg, headRevision, ok, uniqueName } from './support/rest.js';
import { paths } from '../../src/protocol/index.js';
import { emptyRoamStats, eventually, serverState } from './support/roaming.js';

const PG = inject('pgAdminUrl');
const SEED = Number(process.env['SCALEOUT_SEED'] ?? Date.now() % 1_000_000);

/** Followers stay on their replica: each replica's own delivery is what is tested. */
function stayHome(home: string): readonly string[] {
  return [home];
}

async function expectSameState(followers: readonly Follower[], base: string, org: string): Promise<void> {
  const server = plain(await serverState(base, org));
  for (const f of followers) {
    expect(f.client.watch.violations, f.client.name).toEqual([]);
    expect(plainState(f), f.client.name).toEqual(server);
  }
}

/**
 * Holds back new connections to the database of `databaseUrl` for about 5 s:
 * CREATE DATABASE ... TEMPLATE takes a share lock on its template, which
 * new connections wait for, and waits up to 5 s for the template's other
 * sessions to leave before it gives up (they don't: it fails, as intended).
 * Resolves when the hold is over.
 */
async function holdNewConnections(adminUrl: string, databaseUrl: string): Promise<void> {
  const name = new URL(databaseUrl).pathname.slice(1);
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`CREATE DATABASE ${name}_hold TEMPLATE ${name}`);
    // It can't succeed while the replicas are connected; if it did, don't leave it behind.
    await admin.unsafe(`DROP DATABASE ${name}_hold`);
    throw new Error('CREATE DATABASE ... TEMPLATE succeeded: nothing was connected to the template');
  } catch (err) {
    if (!(err instanceof postgres.PostgresError) || err.code !== '55006') throw err;
  } finally {
    await admin.end();
  }
}

/** Granted share locks on the current database object (1 while `holdNewConnections` holds). */
async function heldBack(sql: postgres.Sql): Promise<number> {
  const rows = await sql`
    SELECT 1 FROM pg_locks l JOIN pg_database d ON d.oid = l.objid
    WHERE l.locktype = 'object' AND l.classid = 'pg_database'::regclass AND d.datname = current_database()
      AND l.mode = 'ShareLock' AND l.granted`;
  return rows.length;
}

printOutputOnFailure();

describe.runIf(PG !== '')('dropped notifications (every 3rd bus signal discarded)', () => {
  let cluster: Cluster | undefined;

  beforeAll(async () => {
    ensureBuilt();
    // Neither the safety check (600 s, from BASE_ARGS) nor a hello (30 s) can be what repairs a loss here.
    cluster = await startCluster(PG, 3, ['--bus-hello-interval', '30'], 'replica', { busDropEvery: 3 });
  });

  afterAll(async () => {
    await killAllProcesses();
  });

  it(`every change reaches every watcher; gap detection woke them (seed ${SEED})`, async () => {
    const c = cluster;
    if (!c) throw new Error('cluster not started');
    const urls = c.liveUrls();
    const base = urls[0] ?? '';
    const org = await createOrg(base);
    // Nobody watches it: its signals only carry publishers' sequence numbers.
    const quiet = await createOrg(base);
    await seedObjects(urls, org);
    const stats = emptyRoamStats();
    let following = true;
    const followers = startFollowers(org, urls, 4, stayHome, stats, SEED, () => following);
    try {
      await followersReach(followers, await headRevision(base, org));
      const before = await Promise.all(urls.map(scrape));

      // A burst: a dropped signal is often covered by the organization's next one.
      const writers = await writeBurst(() => urls, org, SEED, 3, 30);
      expect(writers.flatMap((w) => w.errors)).toEqual([]);

      // Then one change at a time, each followed by three signals of the quiet organization from
      // the same replica: four messages a round, so over three rounds every replica drops the
      // change's own signal once, and only the gap the quiet signals reveal can wake its watchers.
      for (let round = 0; round < 3 * urls.length; round++) {
        const url = urls[round % urls.length] ?? base;
        const changed = await ok<{ revision: number }>(200, url, 'PATCH', paths.organization(org), { description: uniqueName('round') });
        for (let q = 0; q < 3; q++) await ok(200, url, 'PATCH', paths.organization(quiet), { description: uniqueName('quiet') });
        await followersSee(followers, 'organization', org, changed.revision, 10_000);
      }
      await followersReach(followers, await headRevision(base, org));
      await expectSameState(followers, base, org);
      expect(stats.brokenStreams).toBe(0);

      const after = await Promise.all(urls.map(scrape));
      const delta = (i: number, f: (s: Scrape) => number): number => f(after[i] as Scrape) - f(before[i] as Scrape);
      urls.forEach((u, i) => {
        expect(delta(i, (s) => s.bus('droppedIncoming')), `signals dropped by ${u}`).toBeGreaterThan(0);
        expect(delta(i, (s) => s.bus('gaps')), `gaps seen by ${u}`).toBeGreaterThan(0);
        expect(delta(i, (s) => s.bus('resyncs_gap')), `gap wake-ups on ${u}`).toBeGreaterThan(0);
        // Nothing else was at work: no reconnect, no stray new publisher, no hello.
        expect(delta(i, (s) => s.bus('reconnects')), `reconnects of ${u}`).toBe(0);
        expect(delta(i, (s) => s.bus('resyncs_new-publisher')), `new publishers on ${u}`).toBe(0);
        expect(delta(i, (s) => s.bus('resyncs_hello')), `hello wake-ups on ${u}`).toBe(0);
      });
    } finally {
      following = false;
      await Promise.all(followers.map((f) => f.run));
    }
  }, 60_000);
});

describe.runIf(PG !== '')('the LISTEN connection cut (pg_terminate_backend)', () => {
  let cluster: Cluster | undefined;

  beforeAll(async () => {
    ensureBuilt();
    // Only the reconnect wake-up can deliver what was committed while a listener was away.
    cluster = await startCluster(PG, 2, ['--bus-hello-interval', '30'], 'cut');
  });

  afterAll(async () => {
    await killAllProcesses();
  });

  it(`the replica reconnects and delivers every change, during and after the cut (seed ${SEED})`, async () => {
    const c = cluster;
    if (!c) throw new Error('cluster not started');
    const urls = c.liveUrls();
    const base = urls[0] ?? '';
    const org = await createOrg(base);
    await seedObjects(urls, org);
    const stats = emptyRoamStats();
    let following = true;
    const followers = startFollowers(org, urls, 4, stayHome, stats, SEED, () => following);
    const sql = postgres(c.databaseUrl, { max: 1, onnotice: () => {} });
    const listeners = () =>
      // query_start: when its LISTEN began (a session only hears what commits after it listens).
      sql<{ pid: number; query_start: Date }[]>`
        SELECT pid, query_start FROM pg_stat_activity
        WHERE datname = current_database() AND query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()`;
    try {
      await followersReach(followers, await headRevision(base, org));
      const before = await Promise.all(urls.map(scrape));
      for (const s of before) expect(s.bus('reconnects')).toBe(0);
      const initial = await listeners();
      expect(initial).toHaveLength(urls.length);
      let victimPid = initial[0]?.pid ?? 0;

      // Cut one replica's LISTEN session while new connections to the database are held back, and
      // commit a change before the replica can listen again: its NOTIFY can't reach that replica, so
      // the change reaches the replica's watchers only through the wake-up after the reconnect.
      let cuts = 0;
      let missed = false;
      while (!missed && cuts < 3) {
        const known = new Set((await listeners()).map((l) => l.pid));
        const hold = holdNewConnections(PG, c.databaseUrl);
        // Awaited below; meanwhile a failure must not count as unhandled.
        hold.catch(() => undefined);
        await eventually(async () => (await heldBack(sql)) === 1, 'new connections to the database are held back');
        const [terminated] = await sql<{ ok: boolean }[]>`SELECT pg_terminate_backend(${victimPid}) AS ok`;
        expect(terminated?.ok).toBe(true);
        cuts++;
        // Through the pools' open connections (a new one would wait for the hold too).
        const changed = await ok<{ revision: number }>(200, urls[cuts % urls.length] ?? base, 'PATCH', paths.organization(org), {
          description: uniqueName('cut'),
        });
        const committedBy = Date.now();
        await hold;
        let fresh: { pid: number; query_start: Date }[] = [];
        await eventually(async () => (fresh = (await listeners()).filter((l) => !known.has(l.pid))).length === 1, 'the listener is back');
        missed = (fresh[0]?.query_start.getTime() ?? 0) > committedBy;
        victimPid = fresh[0]?.pid ?? 0;
        await followersSee(followers, 'organization', org, changed.revision, 10_000);
      }
      expect(missed, `a change committed while the listener was away, in ${cuts} cuts`).toBe(true);

      // Exactly one replica reconnected, once per cut, and woke its watchers each time.
      let after: Scrape[] = [];
      await eventually(async () => {
        after = await Promise.all(urls.map(scrape));
        return after.reduce((n, s) => n + s.bus('reconnects'), 0) >= cuts;
      }, `${cuts} reconnects were counted`);
      const reconnects = after.map((s) => s.bus('reconnects'));
      expect([...reconnects].sort((a, b) => a - b)).toEqual([0, cuts]);
      const victim = reconnects.indexOf(cuts);
      expect(after[victim]?.bus('resyncs_reconnect')).toBe(cuts);

      // It still listens: later changes, from either replica, arrive by signal alone.
      for (let i = 0; i < 6; i++) {
        const changed = await ok<{ revision: number }>(200, urls[i % urls.length] ?? base, 'PATCH', paths.organization(org), {
          description: uniqueName('later'),
        });
        await followersSee(followers, 'organization', org, changed.revision, 10_000);
      }
      const more = await writeBurst(() => urls, org, SEED, 2, 15);
      expect(more.flatMap((w) => w.errors)).toEqual([]);
      await followersReach(followers, await headRevision(base, org));
      await expectSameState(followers, base, org);
      expect(stats.brokenStreams).toBe(0);
    } finally {
      following = false;
      await Promise.all(followers.map((f) => f.run));
      await sql.end();
    }
  }, 60_000);
});
