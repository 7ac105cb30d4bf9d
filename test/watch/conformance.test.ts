import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, prng } from '../server/fixtures.js';
import { openWatch, type WatchStream } from './support/watch-client.js';
import { delay, startWatchServer, type WatchServer } from './support/watch-server.js';
import { ResumingClient, plain, serverState } from './support/client-state.js';
import { randomWrite, type KnownIds } from './support/random-writer.js';

const WRITERS = 3;
/** Writers stop after this long or this many writes each, whichever comes first. */
const WRITE_MS = 3500;
const MAX_WRITES_PER_WRITER = 300;
const CLIENTS = 5;
/** The seed is printed on failure; set WATCH_SEED to replay a run's choices (timing still varies). */
const SEED = Number(process.env['WATCH_SEED'] ?? Date.now() % 1_000_000);

interface RunStats {
  sessions: number;
  /** Sessions that broke before their tails after receiving something: the next one resumes with gt_revision > 0 and at_tail false. */
  beforeTail: number;
  rsts: number;
  errors: Record<string, number>;
  /** Patch events the clients that asked for them applied. */
  patches: number;
}

/**
 * One client's life while the writers run: connect with its resume point,
 * read a random number of events (often fewer than its initial list), break
 * the connection (FIN or RST), wait a little, and again.
 */
async function churn(ws: WatchServer, org: string, client: ResumingClient, rand: () => number, writing: () => boolean, stats: RunStats): Promise<void> {
  while (writing()) {
    // Now and then a client starts over, so streams broken before their tails keep happening.
    if (rand() < 0.25) client.reset();
    const stream = await openWatch(ws.target(org), client.startSession());
    stats.sessions++;
    // Mostly fewer events than an initial list holds while the client has not seen its tails.
    const budget = rand() < (client.atTail ? 0.3 : 0.7) ? Math.floor(rand() * 25) : Math.floor(rand() * 120);
    for (let n = 0; n < budget; n++) {
      const e = await stream.poll(Math.floor(rand() * 150));
      if (e === 'ended' || e === 'timeout') break;
      client.apply(e);
      if (e.type === 'error') {
        stats.errors[e.value.code] = (stats.errors[e.value.code] ?? 0) + 1;
        if (e.value.code === 'revision_compacted') client.reset();
        break;
      }
    }
    if (client.midList) stats.beforeTail++;
    const reset = rand() < 0.3;
    if (reset) stats.rsts++;
    stream.destroy(reset);
    await delay(Math.floor(rand() * 20));
  }
}

/** Reads until the client is consistent with `head` (all tails seen, resume point ≥ head). */
async function catchUp(ws: WatchServer, org: string, client: ResumingClient, head: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(client.atTail && client.position >= head)) {
    const stream: WatchStream = await openWatch(ws.target(org), client.startSession());
    try {
      while (!(client.atTail && client.position >= head)) {
        const e = await stream.poll(Math.max(1, deadline - Date.now()));
        if (e === 'timeout') throw new Error(`${client.name} did not reach revision ${head} (at ${client.position}, at tail ${client.atTail})`);
        if (e === 'ended') break;
        client.apply(e);
        if (e.type === 'error') {
          if (e.value.code === 'revision_compacted') client.reset();
          break;
        }
      }
    } finally {
      stream.destroy();
    }
  }
}

async function runConformance(ws: WatchServer, seed: number): Promise<RunStats> {
  const org = (await ws.h.createOrg()).id;
  const known: KnownIds = { devices: [], groups: [] };
  // A head start, so initial lists are long enough to break before their tails.
  for (let i = 0; i < 8; i++) known.groups.push((await ws.h.createGroup(org, { description: `g${i}` })).id);
  for (let i = 0; i < 40; i++) known.devices.push((await ws.h.createDevice(org)).id);

  const stats: RunStats = { sessions: 0, beforeTail: 0, rsts: 0, errors: {}, patches: 0 };
  let writersLeft = WRITERS;
  const writeErrors: string[] = [];
  // Odd clients ask for patches: each must still end with exactly the server's state.
  const clients = Array.from({ length: CLIENTS }, (_, i) => new ResumingClient(`client${i}`, undefined, i % 2 === 1));
  const clientRuns = clients.map((c, i) => churn(ws, org, c, prng(seed + 1000 + i), () => writersLeft > 0, stats));
  const writerRuns = Array.from({ length: WRITERS }, async (_, w) => {
    const wrand = prng(seed + 100 + w);
    const stopAt = Date.now() + WRITE_MS;
    for (let i = 0; i < MAX_WRITES_PER_WRITER && Date.now() < stopAt; i++) {
      const err = await randomWrite(ws.h, org, wrand, known);
      if (err) writeErrors.push(err);
      if (wrand() < 0.5) await delay(Math.floor(wrand() * 15));
    }
    writersLeft--;
  });
  await Promise.all(writerRuns);
  await Promise.all(clientRuns);
  expect(writeErrors).toEqual([]);

  const head = await ws.h.head(org);
  await Promise.all(clients.map((c) => catchUp(ws, org, c, head)));
  const server = plain(await serverState(ws.h, org));
  for (const c of clients) {
    expect(c.violations, c.name).toEqual([]);
    expect(plain(c.state), `${c.name} after ${c.sessions} sessions`).toEqual(server);
    stats.patches += c.patches;
  }
  return stats;
}

const RUNS = [
  { tailCacheSize: 8, what: 'a tiny tail cache (ring and database catch-up)' },
  { tailCacheSize: 1024, what: 'a large tail cache (mostly the ring)' },
];

describe.each(backends())('watch conformance on $name', ({ name, available }) => {
  describe.runIf(available)('random writers, churning clients', () => {
    let ws: WatchServer;
    beforeAll(async () => {
      ws = await startWatchServer(name, { bookmarkInterval: 0.2 });
    });
    afterAll(async () => {
      await ws?.close();
    });

    it.each(RUNS)(`every resuming client ends with exactly the server's state, with $what (seed ${SEED})`, async ({ tailCacheSize }) => {
      // Read when the organization's cache is made: each run has its own organization.
      ws.settings.tailCacheSize = tailCacheSize;
      const catchUpsBefore = await ws.metric('fleetplane_watch_catchup_queries_total');
      const fillsBefore = await ws.metric('fleetplane_watch_fill_queries_total');
      const stats = await runConformance(ws, SEED + tailCacheSize);
      // The run must have exercised what it claims to.
      expect(stats.sessions).toBeGreaterThanOrEqual(CLIENTS * 2);
      expect(stats.beforeTail).toBeGreaterThan(0);
      expect(stats.errors).toEqual({});
      expect(stats.patches).toBeGreaterThan(0);
      expect(await ws.metric('fleetplane_watch_catchup_queries_total')).toBeGreaterThan(catchUpsBefore);
      expect(await ws.metric('fleetplane_watch_fill_queries_total')).toBeGreaterThan(fillsBefore);
    });
  });
});
