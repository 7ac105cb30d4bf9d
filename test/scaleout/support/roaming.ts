import { paths } from '../../../src/protocol/index.js';
import { emptyState, ResumingClient, type KindState } from '../../watch/support/client-state.js';
import { openWatch, type WatchStream } from '../../watch/support/watch-client.js';
import { ADMIN_TOKEN } from './replica-process.js';
import { ok } from './rest.js';

/** What the churning clients did, to check a run exercised what it claims to. */
export interface RoamStats {
  sessions: number;
  /** Sessions that resumed (gt_revision > 0) on another replica than the client's previous session. */
  crossResumes: number;
  /** Of those, sessions that resumed before the tails (at_tail false). */
  crossResumesBeforeTail: number;
  /** Streams that could not be opened (a dead replica), retried on another. */
  openFailures: number;
  /** Streams that ended without the client closing them (a replica died under it). */
  brokenStreams: number;
  rsts: number;
  errors: Record<string, number>;
  /** Sessions opened, by replica URL. */
  sessionsByReplica: Record<string, number>;
  /** Followers that gave up (could not open a stream anywhere), with why. */
  failures: string[];
}

export function emptyRoamStats(): RoamStats {
  return { sessions: 0, crossResumes: 0, crossResumesBeforeTail: 0, openFailures: 0, brokenStreams: 0, rsts: 0, errors: {}, sessionsByReplica: {}, failures: [] };
}

/**
 * A resuming client (docs/protocol.md "Watch") that opens every session on a
 * replica other than the one of its previous session.
 */
export class RoamingClient {
  readonly watch: ResumingClient;
  /** Replica URL of the last session opened (undefined before the first). */
  last: string | undefined;

  constructor(
    name: string,
    readonly org: string,
    private readonly urls: () => readonly string[],
    private readonly rand: () => number,
    readonly stats: RoamStats,
  ) {
    this.watch = new ResumingClient(name);
  }

  get name(): string {
    return this.watch.name;
  }

  /**
   * Opens the next session on `preferred`, else on a replica other than the
   * last session's; while it can't connect, tries others.
   */
  async open(preferred?: string): Promise<WatchStream> {
    const failed = new Set<string>();
    for (let attempt = 0; ; attempt++) {
      const all = this.urls();
      const others = all.filter((u) => u !== this.last && !failed.has(u));
      const candidates = others.length > 0 ? others : all;
      const url = attempt === 0 && preferred !== undefined ? preferred : candidates[Math.floor(this.rand() * candidates.length)];
      if (url === undefined) throw new Error(`${this.name}: no replica to watch`);
      const resumed = this.watch.position > 0;
      const beforeTail = !this.watch.atTail;
      try {
        const stream = await openWatch({ url, org: this.org, token: ADMIN_TOKEN }, this.watch.startSession());
        this.stats.sessions++;
        this.stats.sessionsByReplica[url] = (this.stats.sessionsByReplica[url] ?? 0) + 1;
        if (resumed && this.last !== undefined && this.last !== url) {
          this.stats.crossResumes++;
          if (beforeTail) this.stats.crossResumesBeforeTail++;
        }
        this.last = url;
        return stream;
      } catch (err) {
        this.stats.openFailures++;
        failed.add(url);
        if (attempt >= 20) throw new Error(`${this.name}: could not open a watch on any replica: ${String(err)}`);
        await delay(Math.floor(this.rand() * 50));
      }
    }
  }

  /**
   * Applies one polled event; returns false when the session is over
   * (the stream ended, or an error event).
   */
  applyPolled(e: Awaited<ReturnType<WatchStream['poll']>>): boolean | 'timeout' {
    if (e === 'timeout') return 'timeout';
    if (e === 'ended') {
      // Error events end the session before this: the server (or its death) ended the stream.
      this.stats.brokenStreams++;
      return false;
    }
    this.watch.apply(e);
    if (e.type === 'error') {
      this.stats.errors[e.value.code] = (this.stats.errors[e.value.code] ?? 0) + 1;
      if (e.value.code === 'revision_compacted') this.watch.reset();
      return false;
    }
    return true;
  }

  /**
   * Churns while `running()`: a session on another replica, a random number
   * of events (often fewer than the initial list), a break (FIN or RST) at a
   * random point, again.
   */
  async churn(running: () => boolean): Promise<void> {
    const rand = this.rand;
    while (running()) {
      // Now and then a client starts over, so streams broken before their tails keep happening.
      if (rand() < 0.2) this.watch.reset();
      const stream = await this.open();
      const budget = rand() < (this.watch.atTail ? 0.3 : 0.7) ? Math.floor(rand() * 25) : Math.floor(rand() * 120);
      for (let n = 0; n < budget; n++) {
        if (this.applyPolled(await stream.poll(Math.floor(rand() * 150))) !== true) break;
      }
      const reset = rand() < 0.3;
      if (reset) this.stats.rsts++;
      stream.destroy(reset);
      await delay(Math.floor(rand() * 20));
    }
  }

  /**
   * Follows the organization while `running()`: the first session on
   * `home`, every event read as it comes; when a stream ends (its replica
   * died), resumes on another replica.
   */
  async follow(home: string, running: () => boolean): Promise<void> {
    let preferred: string | undefined = home;
    while (running()) {
      const stream = await this.open(preferred);
      preferred = undefined;
      try {
        for (;;) {
          const r = this.applyPolled(await stream.poll(100));
          if (r === true || (r === 'timeout' && running())) continue;
          break;
        }
      } finally {
        stream.destroy();
      }
    }
  }

  /** Reads (resuming on other replicas as streams end) until consistent with `head`; throws after `timeoutMs`. */
  async catchUp(head: number, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const done = () => this.watch.atTail && this.watch.position >= head;
    while (!done()) {
      const stream = await this.open();
      try {
        while (!done()) {
          const left = deadline - Date.now();
          const r = this.applyPolled(await stream.poll(Math.max(1, left)));
          if (r === 'timeout' || left <= 0) {
            throw new Error(`${this.name} did not reach revision ${head} on ${this.last} (at ${this.watch.position}, at tail ${this.watch.atTail})`);
          }
          if (!r) break;
        }
      } finally {
        stream.destroy();
      }
    }
  }
}

/** The server's state as its lists report it (devices without `status`, which watch events never carry). */
export async function serverState(base: string, org: string): Promise<KindState> {
  const state = emptyState();
  const devices = await ok<{ items: Record<string, unknown>[] }>(200, base, 'GET', paths.devices(org));
  for (const d of devices.items) {
    const { status: _status, ...rest } = d;
    state.device.set(String(d['id']), rest);
  }
  const groups = await ok<{ items: Record<string, unknown>[] }>(200, base, 'GET', paths.securityGroups(org));
  for (const g of groups.items) state['security-group'].set(String(g['id']), g);
  const o = await ok<Record<string, unknown>>(200, base, 'GET', paths.organization(org));
  state.organization.set(String(o['id']), o);
  return state;
}

export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `check` until true; throws with `what` when `timeoutMs` passes first. */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await delay(25);
  }
}
