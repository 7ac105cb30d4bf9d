import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { paths } from '../../src/protocol/index.js';
import { plain } from '../watch/support/client-state.js';
import { hasRedis, requireBinary } from '../support/binaries.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import { startCluster, type Cluster } from './support/cluster.js';
import { runRoamingConformance } from './support/conformance-run.js';
import { scrape, type Scrape } from './support/metrics.js';
import { ensureBuilt, killAllProcesses, printOutputOnFailure } from './support/replica-process.js';
import { headRevision, ok, uniqueName } from './support/rest.js';
import { delay, emptyRoamStats, eventually, serverState } from './support/roaming.js';
import { followersReach, followersSee, plainState, startFollowers } from './support/followers.js';

const PG = inject('pgAdminUrl');
const SEED = Number(process.env['SCALEOUT_SEED'] ?? Date.now() % 1_000_000);
const runRedis = PG !== '' && requireBinary('redis-server', hasRedis());

printOutputOnFailure();

describe.runIf(runRedis)('three replicas on one PostgreSQL with --bus redis', () => {
  let cluster: Cluster | undefined;
  let redis: RedisServer | undefined;

  beforeAll(async () => {
    ensureBuilt();
    redis = await startRedis();
    // Hellos (30 s) and the safety check (600 s) can't repair what a restart loses: the reconnect must.
    cluster = await startCluster(PG, 3, ['--bus', 'redis', '--redis-url', redis.url, '--bus-hello-interval', '30']);
  });

  afterAll(async () => {
    await killAllProcesses();
    await redis?.dispose();
  });

  it(`clients resuming on other replicas end with exactly the server's state, across a Redis restart (seed ${SEED})`, async () => {
    const c = cluster;
    const r = redis;
    if (!c || !r) throw new Error('cluster not started');
    const urls = c.liveUrls();
    const before = await Promise.all(urls.map(scrape));

    const restart = async (): Promise<void> => {
      await r.stop();
      // Writes go on meanwhile: their signals can't be sent.
      await delay(400);
      await r.start();
    };
    const run = await runRoamingConformance(c, { seed: SEED, clientsPerReplica: 4, writers: 3, writesPerWriter: 50, midway: restart });
    expect(run.writers.flatMap((w) => w.errors)).toEqual([]);
    for (const s of run.states) {
      expect(s.violations, s.name).toEqual([]);
      expect(s.state, s.name).toEqual(run.server);
    }
    expect(run.stats.errors).toEqual({});
    expect(run.stats.crossResumes).toBeGreaterThan(0);
    expect(run.stats.crossResumesBeforeTail).toBeGreaterThan(0);

    // A restart after the last writes, with watchers that stay on their replica: nothing later rings
    // the bell for what was written while Redis was away, so only each replica's wake-up on
    // reconnect can bring it to them.
    const stats = emptyRoamStats();
    let following = true;
    const followers = startFollowers(run.org, urls, 2, (home) => [home], stats, SEED + 7, () => following);
    try {
      await followersReach(followers, await headRevision(urls[0] ?? '', run.org));
      await r.stop();
      let last = 0;
      for (const url of urls) {
        last = (await ok<{ revision: number }>(200, url, 'PATCH', paths.organization(run.org), { description: uniqueName('redis-down') })).revision;
      }
      await r.start();
      await followersSee(followers, 'organization', run.org, last, 15_000);
      const server = plain(await serverState(urls[0] ?? '', run.org));
      for (const f of followers) expect(plainState(f), f.client.name).toEqual(server);
      expect(stats.brokenStreams).toBe(0);
    } finally {
      following = false;
      await Promise.all(followers.map((f) => f.run));
    }

    // A replica whose own write was the last may have shown it before its subscriber was back.
    let after: Scrape[] = [];
    const delta = (i: number, f: (s: Scrape) => number): number => f(after[i] as Scrape) - f(before[i] as Scrape);
    await eventually(async () => {
      after = await Promise.all(urls.map(scrape));
      return urls.every((_, i) => delta(i, (s) => s.bus('reconnects')) >= 2);
    }, 'every replica counted both reconnects').catch(() => undefined);
    urls.forEach((u, i) => {
      expect(delta(i, (s) => s.bus('reconnects')), `reconnects of ${u}`).toBeGreaterThanOrEqual(2);
      expect(delta(i, (s) => s.bus('resyncs_reconnect')), `reconnect wake-ups of ${u}`).toBeGreaterThanOrEqual(2);
    });
    // Signals were sent while Redis was down, and failed.
    expect(after.reduce((n, _, i) => n + delta(i, (s) => s.bus('sendFailures')), 0)).toBeGreaterThan(0);
  }, 90_000);
});
