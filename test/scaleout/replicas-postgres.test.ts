import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { runRoamingConformance } from './support/conformance-run.js';
import { ensureBuilt, killAllProcesses, printOutputOnFailure } from './support/replica-process.js';
import { scrape } from './support/metrics.js';

const PG = inject('pgAdminUrl');
/** The seed is printed in the test name; set SCALEOUT_SEED to replay a run's choices (timing still varies). */
const SEED = Number(process.env['SCALEOUT_SEED'] ?? Date.now() % 1_000_000);

printOutputOnFailure();

describe.runIf(PG !== '')('three replicas on one PostgreSQL (bus postgres)', () => {
  let cluster: Cluster | undefined;

  beforeAll(async () => {
    ensureBuilt();
    cluster = await startCluster(PG, 3, ['--bus', 'postgres']);
  });

  afterAll(async () => {
    await killAllProcesses();
  });

  it(`clients resuming on other replicas end with exactly the server's state (seed ${SEED})`, async () => {
    const c = cluster;
    if (!c) throw new Error('cluster not started');
    const fillsBefore = await Promise.all(c.liveUrls().map(async (u) => (await scrape(u)).fills));
    const r = await runRoamingConformance(c, { seed: SEED, clientsPerReplica: 4, writers: 3, writesPerWriter: 50 });

    expect(r.writers.flatMap((w) => w.errors)).toEqual([]);
    for (const s of r.states) {
      expect(s.violations, s.name).toEqual([]);
      expect(s.state, s.name).toEqual(r.server);
    }
    for (const other of r.serverByReplica) expect(other).toEqual(r.server);

    // The run exercised what it claims to.
    expect(r.stats.errors).toEqual({});
    expect(r.stats.openFailures).toBe(0);
    expect(r.stats.sessions).toBeGreaterThan(r.clients.length * 3);
    expect(r.stats.crossResumes).toBeGreaterThan(0);
    expect(r.stats.crossResumesBeforeTail).toBeGreaterThan(0);
    for (const url of c.liveUrls()) {
      expect(r.stats.sessionsByReplica[url] ?? 0, `sessions on ${url}`).toBeGreaterThan(0);
      expect(r.writers.reduce((n, w) => n + (w.answered.get(url) ?? 0), 0), `writes answered by ${url}`).toBeGreaterThan(0);
    }
    // Every replica filled its tail cache from signals (not only from catch-up reads).
    const fillsAfter = await Promise.all(c.liveUrls().map(async (u) => (await scrape(u)).fills));
    fillsAfter.forEach((n, i) => expect(n, `fill queries of replica ${i}`).toBeGreaterThan(fillsBefore[i] ?? 0));
  }, 90_000);
});
