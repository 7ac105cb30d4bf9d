import { plain } from '../../watch/support/client-state.js';
import { prng } from '../../server/fixtures.js';
import { paths, type WatchKind } from '../../../src/protocol/index.js';
import { ok, uniqueName, wgKey } from './rest.js';
import { eventually, RoamingClient, type RoamStats } from './roaming.js';
import { SpreadWriter } from './spread-writer.js';

/** A client that follows the organization from a home replica, and where it may resume when a stream ends. */
export interface Follower {
  home: string;
  client: RoamingClient;
  /** Settles when the follower stops; never rejects (a follower that gives up is in its stats' `failures`). */
  run: Promise<void>;
}

/**
 * Starts `perReplica` followers on each of `homes`. A follower resumes on
 * one of `resumeUrls()` (its home included) when its stream ends.
 */
export function startFollowers(
  org: string,
  homes: readonly string[],
  perReplica: number,
  resumeUrls: (home: string) => readonly string[],
  stats: RoamStats,
  seed: number,
  running: () => boolean,
): Follower[] {
  return homes.flatMap((home, h) =>
    Array.from({ length: perReplica }, (_, i) => {
      const client = new RoamingClient(`follower${h}.${i}`, org, () => resumeUrls(home), prng(seed + 10 * h + i), stats);
      // A follower that gives up is recorded (and stays behind, which the waits report).
      const run = client.follow(home, running).catch((err: unknown) => {
        stats.failures.push(`${client.name}: ${String(err)}`);
      });
      return { home, client, run };
    }),
  );
}

/** Waits until every follower is consistent with `head` (its tails seen, its resume point at or past it). */
export async function followersReach(followers: readonly Follower[], head: number, timeoutMs = 20_000): Promise<void> {
  const behind = () => followers.filter((f) => !(f.client.watch.atTail && f.client.watch.position >= head));
  await eventually(() => behind().length === 0, `every follower reached revision ${head}`, timeoutMs).catch((err: unknown) => {
    const lagging = behind().map((f) => `${f.client.name} at ${f.client.watch.position} (tail ${f.client.watch.atTail}) on ${f.client.last}`);
    const failures = followers[0]?.client.stats.failures ?? [];
    throw new Error(`${String(err)}; behind: ${lagging.join(', ')}${failures.length > 0 ? `; gave up: ${failures.join('; ')}` : ''}`);
  });
}

/** Waits until every follower holds object `id` of `kind` at `revision` or later. */
export async function followersSee(followers: readonly Follower[], kind: WatchKind, id: string, revision: number, timeoutMs = 20_000): Promise<void> {
  const seen = (f: Follower): boolean => {
    const v = f.client.watch.state[kind].get(id) as { revision?: number } | undefined;
    return (v?.revision ?? 0) >= revision;
  };
  await eventually(() => followers.every(seen), `every follower saw ${kind} ${id} at revision ${revision}`, timeoutMs).catch((err: unknown) => {
    const lagging = followers.filter((f) => !seen(f)).map((f) => `${f.client.name} on ${f.client.last}`);
    throw new Error(`${String(err)}; not seen by: ${lagging.join(', ')}`);
  });
}

/** Seeds an organization with a few groups and devices through `urls` in turn. */
export async function seedObjects(urls: readonly string[], org: string, groups = 4, devices = 16): Promise<void> {
  for (let i = 0; i < Math.max(groups, devices); i++) {
    const url = urls[i % urls.length];
    if (url === undefined) throw new Error('no replica to write to');
    if (i < groups) await ok(201, url, 'POST', paths.securityGroups(org), { description: `g${i}` });
    if (i < devices) await ok(201, url, 'POST', paths.devices(org), { hostname: uniqueName('seed'), public_key: wgKey() });
  }
}

/** Runs `writers` writers of `writes` random writes each over `urls()`; `onWrite(n)` is called after the n-th write overall. */
export async function writeBurst(
  urls: () => readonly string[],
  org: string,
  seed: number,
  writers: number,
  writes: number,
  onWrite: (n: number) => void = () => {},
): Promise<SpreadWriter[]> {
  const ws = Array.from({ length: writers }, (_, i) => new SpreadWriter(urls, org, prng(seed + 100 + i)));
  let n = 0;
  await Promise.all(
    ws.map(async (w, i) => {
      const rand = prng(seed + 300 + i);
      for (let k = 0; k < writes; k++) {
        await w.write();
        onWrite(++n);
        await new Promise((r) => setTimeout(r, Math.floor(rand() * 20)));
      }
    }),
  );
  return ws;
}

export function plainState(f: Follower): ReturnType<typeof plain> {
  return plain(f.client.watch.state);
}
