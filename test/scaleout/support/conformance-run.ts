import { plain } from '../../watch/support/client-state.js';
import { prng } from '../../server/fixtures.js';
import type { Cluster } from './cluster.js';
import { createOrg, headRevision, ok, uniqueName, wgKey } from './rest.js';
import { delay, emptyRoamStats, RoamingClient, serverState, type RoamStats } from './roaming.js';
import { SpreadWriter } from './spread-writer.js';
import { followersReach, startFollowers } from './followers.js';
import { paths } from '../../../src/protocol/index.js';

export interface ConformanceOptions {
  seed: number;
  clientsPerReplica: number;
  writers: number;
  writesPerWriter: number;
  /** Runs once, concurrently with the writers, when half of the writes are done (writes go on meanwhile). */
  midway?: () => Promise<void>;
  /**
   * Watchers that stay connected to one replica through the whole run (default 1 per replica):
   * at the end they must reach the head by signals alone, whichever replica wrote last.
   */
  followersPerReplica?: number;
}

export interface ConformanceResult {
  org: string;
  stats: RoamStats;
  clients: RoamingClient[];
  writers: SpreadWriter[];
  /** Every client's (and follower's) final state and ordering violations, for `toEqual`. */
  states: { name: string; violations: string[]; state: ReturnType<typeof plain> }[];
  /** The server's state as the first live replica lists it. */
  server: ReturnType<typeof plain>;
  /** The server's state as each live replica lists it. */
  serverByReplica: ReturnType<typeof plain>[];
}

/**
 * The randomized resume test across replicas: writers send random writes to
 * random replicas; clients churn, each session on another replica than the
 * last, resuming from their last revision with `at_tail` as seen, while
 * followers stay on their replica; at the end every client catches up and
 * its state is compared with the server's lists.
 */
export async function runRoamingConformance(cluster: Cluster, o: ConformanceOptions): Promise<ConformanceResult> {
  const urls = (): readonly string[] => cluster.liveUrls();
  const base = (): string => {
    const u = urls()[0];
    if (u === undefined) throw new Error('no live replica');
    return u;
  };
  const org = await createOrg(base());
  // A head start, so initial lists are long enough to break before their tails.
  const seedUrls = urls();
  for (let i = 0; i < 30; i++) {
    const url = seedUrls[i % seedUrls.length] ?? base();
    if (i < 6) await ok(201, url, 'POST', paths.securityGroups(org), { description: `g${i}` });
    await ok(201, url, 'POST', paths.devices(org), { hostname: uniqueName('seed'), public_key: wgKey() });
  }

  const stats = emptyRoamStats();
  const clients = Array.from({ length: o.clientsPerReplica * urls().length }, (_, i) => new RoamingClient(`client${i}`, org, urls, prng(o.seed + 1000 + i), stats));
  const writers = Array.from({ length: o.writers }, (_, w) => new SpreadWriter(urls, org, prng(o.seed + 100 + w)));
  const total = o.writers * o.writesPerWriter;
  let written = 0;
  let midway: Promise<void> | undefined;
  let writing = true;
  let following = true;
  const followers = startFollowers(org, urls(), o.followersPerReplica ?? 1, (home) => [home], stats, o.seed + 5000, () => following);
  let clientRuns: Promise<void>[] = [];
  try {
    await followersReach(followers, await headRevision(base(), org));
    clientRuns = clients.map((c) => c.churn(() => writing));
    await Promise.all(
      writers.map(async (w, i) => {
        const rand = prng(o.seed + 200 + i);
        for (let n = 0; n < o.writesPerWriter; n++) {
          await w.write();
          written++;
          if (o.midway && !midway && written >= total / 2) midway = o.midway();
          await delay(Math.floor(rand() * 30));
        }
      }),
    );
    await midway;
    writing = false;
    await Promise.all(clientRuns);

    const head = await headRevision(base(), org);
    await followersReach(followers, head);
    await Promise.all(clients.map((c) => c.catchUp(head)));
  } finally {
    writing = false;
    following = false;
    await Promise.allSettled([...clientRuns, ...followers.map((f) => f.run)]);
  }
  const serverByReplica = await Promise.all(urls().map(async (u) => plain(await serverState(u, org))));
  return {
    org,
    stats,
    clients,
    writers,
    states: [...clients, ...followers.map((f) => f.client)].map((c) => ({ name: c.name, violations: c.watch.violations, state: plain(c.watch.state) })),
    server: serverByReplica[0] ?? plain(await serverState(base(), org)),
    serverByReplica,
  };
}
