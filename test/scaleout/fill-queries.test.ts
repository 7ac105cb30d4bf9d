import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { WATCH_KINDS, paths, type WatchEvent } from '../../src/protocol/index.js';
import { openWatch, type WatchStream } from '../watch/support/watch-client.js';
import { startCluster, type Cluster } from './support/cluster.js';
import { scrape, type Scrape } from './support/metrics.js';
import { ADMIN_TOKEN, ensureBuilt, killAllProcesses, printOutputOnFailure } from './support/replica-process.js';
import { createOrg, ok, uniqueName } from './support/rest.js';
import { delay, eventually } from './support/roaming.js';
import { seedObjects } from './support/followers.js';

const PG = inject('pgAdminUrl');
const REPLICAS = 3;
const WATCHERS = 300;
/** Sequential writes counted after the warm-up. */
const K = 12;

/** A watch stream and the highest change revision it has received. */
class Counted {
  private scanned = 0;
  private highest = 0;

  constructor(readonly stream: WatchStream) {}

  /** Highest revision of the change/delete events received so far. */
  get seen(): number {
    const events: readonly WatchEvent[] = this.stream.events;
    for (; this.scanned < events.length; this.scanned++) {
      const e = events[this.scanned];
      if (e && (e.type === 'change' || e.type === 'delete')) this.highest = Math.max(this.highest, e.value.revision);
    }
    return this.highest;
  }

  get tails(): number {
    return this.stream.events.filter((e) => e.type === 'tail').length;
  }
}

async function allSee(watchers: readonly Counted[], revision: number): Promise<void> {
  await eventually(() => watchers.every((w) => w.seen >= revision), `all ${watchers.length} watchers saw revision ${revision}`).catch((err: unknown) => {
    const behind = watchers.filter((w) => w.seen < revision).length;
    throw new Error(`${String(err)} (${behind} behind)`);
  });
}

/** Polls until two scrapes `stableMs` apart show the same resync counters on every replica. */
async function resyncsSettled(urls: readonly string[], stableMs: number): Promise<Scrape[]> {
  let last = await Promise.all(urls.map(scrape));
  for (let i = 0; i < 40; i++) {
    await delay(stableMs);
    const next = await Promise.all(urls.map(scrape));
    if (next.every((s, j) => s.resyncs === last[j]?.resyncs)) return next;
    last = next;
  }
  throw new Error('the resync counters never settled');
}

printOutputOnFailure();

describe.runIf(PG !== '')(`fill queries with ${WATCHERS} watchers over ${REPLICAS} replicas`, () => {
  let cluster: Cluster | undefined;
  const watchers: Counted[] = [];

  beforeAll(async () => {
    ensureBuilt();
    cluster = await startCluster(PG, REPLICAS, [], 'fill');
  });

  afterAll(async () => {
    for (const w of watchers) w.stream.destroy(true);
    await killAllProcesses();
  });

  it('one fill query per change per replica, and no catch-up query, whatever the number of watchers', async () => {
    const c = cluster;
    if (!c) throw new Error('cluster not started');
    const urls = c.liveUrls();
    const org = await createOrg(urls[0] ?? '');
    await seedObjects(urls, org, 2, 6);
    for (let i = 0; i < WATCHERS; i++) {
      const url = urls[i % urls.length] ?? '';
      watchers.push(new Counted(await openWatch({ url, org, token: ADMIN_TOKEN }, WATCH_KINDS.map((kind) => ({ kind })))));
    }
    await eventually(() => watchers.every((w) => w.tails === WATCH_KINDS.length), 'every watcher reached its tails');

    // Warm-up: a write through each replica, so every replica has heard every publisher
    // (a first contact wakes everything once), then until the resync counters stand still.
    for (const url of urls) {
      const changed = await ok<{ revision: number }>(200, url, 'PATCH', paths.organization(org), { description: uniqueName('warm') });
      await allSee(watchers, changed.revision);
    }
    const before = await resyncsSettled(urls, 300);

    for (let k = 0; k < K; k++) {
      const url = urls[k % urls.length] ?? '';
      const changed = await ok<{ revision: number }>(200, url, 'PATCH', paths.organization(org), { description: uniqueName('k') });
      await allSee(watchers, changed.revision);
    }
    const after = await Promise.all(urls.map(scrape));

    urls.forEach((u, i) => {
      const a = after[i] as Scrape;
      const b = before[i] as Scrape;
      // A resync wakes the feed once more (one extra fill); none is expected here, and any is subtracted.
      const resyncs = a.resyncs - b.resyncs;
      expect(a.fills - b.fills - resyncs, `fill queries of ${u} (resyncs meanwhile: ${resyncs})`).toBe(K);
      expect(a.catchUps - b.catchUps, `catch-up queries of ${u}`).toBe(0);
      expect(a.value('fleetplane_watch_changes_total') - b.value('fleetplane_watch_changes_total'), `changes appended on ${u}`).toBe(K);
      expect(a.value('fleetplane_watchers'), `watchers on ${u}`).toBe(WATCHERS / REPLICAS);
    });
  }, 90_000);
});
