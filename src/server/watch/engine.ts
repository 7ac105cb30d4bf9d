import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { MEDIA, orgSignal, type Watch } from '../../protocol/index.js';
import type { Store } from '../store/index.js';
import type { SignalBus } from '../bus/index.js';
import type { Settings } from '../config/settings.js';
import { ApiError, shuttingDown } from '../errors.js';
import { runPeriodically } from '../../util/periodic.js';
import { OrgFeed } from './org-feed.js';
import { Watcher, type WatcherShared } from './watcher.js';
import { ListAdmission } from './list-admission.js';
import { SnapshotBudget } from './org-snapshot.js';
import { responseHead } from './encode.js';
import type { WatchMetrics } from './watch-metrics.js';
import { KernelMemoryGuard } from './kernel-memory-guard.js';
import { procTcpMemory, type TcpMemorySource } from './proc-tcp.js';

export interface OpenStream {
  orgId: string;
  watches: readonly Watch[];
  tokenId: string | undefined;
  /** The device whose own token opened the stream: it counts as connected while the stream is open. */
  deviceId: string | undefined;
  socket: Socket;
}

/** A watch request checked by `prepare`, to be opened with `open` (or given back with `abandon`). */
export interface PreparedWatch {
  readonly feed: OrgFeed;
  /** The request holds an initial-list turn, released when its stream reaches the head or ends. */
  readonly listTurn: boolean;
}

/**
 * Least time between two sums of every watcher's queued bytes when watchers
 * pause. A sum reads every watcher (5,000 per worker of a 10,000-agent
 * fleet), and a joining fleet pauses all the time: at 100 ms it took half a
 * second a minute. A longer spacing lets no queue grow unbounded meanwhile:
 * a watcher pauses at its own limit (`--watch-buffer-limit`), so the total
 * can only go as far as the watchers' limits together until the next sum.
 */
const QUEUE_CHECK_SPACING_MS = 1_000;
/** How often the host's TCP memory is looked at (one read of /proc/net/sockstat). */
const KERNEL_CHECK_INTERVAL_MS = 50;

/** Where watch streams opened with a device token are counted (the fleet module's presence). */
export interface StreamPresence {
  add(deviceId: string, orgId: string): void;
  remove(deviceId: string): void;
}

/**
 * The watch engine of one replica: a tail cache per organization with
 * watchers, filled on bus signals; periodic safety re-reads of head
 * revisions and bookmarks on idle streams; streams of revoked tokens end
 * when the revocation follower says so (`closeRevoked`).
 */
export class WatchEngine {
  private readonly feeds = new Map<string, Promise<OrgFeed>>();
  private readonly watchers = new Set<Watcher>();
  /** Streams by the token they were opened with; one stream per token is the rule (an agent's), so it is kept bare, not in a set. */
  private readonly byToken = new Map<string, Watcher | Set<Watcher>>();
  private readonly deviceOf = new Map<Watcher, string>();
  private readonly stop = new AbortController();
  private loops: Promise<void>[] = [];
  private closing = false;
  /** Memory the organizations' snapshots share (`--snapshot-budget`). */
  readonly snapshotBudget: SnapshotBudget;
  readonly admission: ListAdmission;
  private readonly listTurns = new Set<Watcher>();
  private lastQueueCheck = 0;
  /** Holds lists back and closes stalled watchers when the host nears TCP memory pressure. */
  readonly kernelGuard: KernelMemoryGuard<Watcher>;
  /** What every watcher shares (settings, metrics, callbacks): one object, not one per stream. */
  private readonly watcherShared: WatcherShared;

  constructor(
    private readonly store: Store,
    private readonly bus: SignalBus,
    private readonly settings: Settings,
    private readonly metrics: WatchMetrics,
    private readonly logger: Logger,
    private readonly presence?: StreamPresence,
    /** Where the kernel guard reads the host's TCP memory (a test gives a host under pressure). */
    tcpMemory: TcpMemorySource = procTcpMemory,
  ) {
    this.snapshotBudget = new SnapshotBudget(settings.snapshotBudget);
    this.admission = new ListAdmission({
      maxActive: settings.maxConcurrentLists,
      maxQueued: 100_000,
      timeoutMs: settings.listQueueTimeout * 1000,
      // Spread over a few seconds, so a refused herd doesn't come back as one.
      retryAfterS: () => 1 + Math.floor(Math.random() * 4),
    });
    const budget = this.snapshotBudget;
    metrics.snapshotBytes.set(0);
    metrics.observeSnapshot(() => budget.used);
    this.kernelGuard = new KernelMemoryGuard({
      source: tcpMemory,
      minHeld: settings.watchBufferLimit,
      watchers: this.watchers,
      shed: (w) => w.close('slow_consumer', 'the server holds too much in its TCP buffers for watchers that do not read; resume from your last revision'),
      logger,
    });
    this.watcherShared = {
      store,
      metrics,
      logger,
      onListed: (w) => {
        if (this.listTurns.delete(w)) this.admission.release();
      },
      onPaused: () => this.checkQueue(),
      kernel: this.kernelGuard,
      onClose: (w) => this.remove(w),
    };
  }

  start(): void {
    const s = this.settings;
    const onError = (what: string) => (err: unknown) => this.logger.error({ err }, `${what} failed`);
    this.loops = [
      runPeriodically(s.safetyCheckInterval * 1000, this.stop.signal, () => this.safetyCheck(), onError('watch safety check')),
      runPeriodically((s.bookmarkInterval * 1000) / 4, this.stop.signal, async () => this.bookmarks(), onError('bookmarks')),
      runPeriodically(KERNEL_CHECK_INTERVAL_MS, this.stop.signal, () => this.checkKernel(), onError('kernel TCP memory check')),
    ];
  }

  get watcherCount(): number {
    return this.watchers.size;
  }

  /** Live watchers (tests and diagnostics). */
  list(): readonly Watcher[] {
    return [...this.watchers];
  }

  private feedFor(orgId: string): Promise<OrgFeed> {
    let p = this.feeds.get(orgId);
    if (!p) {
      const feed = new OrgFeed(orgId, this.store, this.settings.tailCacheSize, this.metrics, this.logger, this.snapshotBudget);
      p = feed.start((onWake) => this.bus.subscribe(orgSignal(orgId), onWake)).then(() => feed);
      p.catch(() => this.feeds.delete(orgId));
      this.feeds.set(orgId, p);
      this.metrics.feeds.set(this.feeds.size);
    }
    return p;
  }

  /**
   * Checks a watch request against the organization's feed; throws ApiError
   * (404, 410, 503) before anything is streamed. The feed returned is
   * reserved until `open` takes it, so it can't be dropped in between: every
   * successful `prepare` must be followed by `open`.
   */
  async prepare(orgId: string, watches: readonly Watch[]): Promise<PreparedWatch> {
    if (this.closing) throw shuttingDown();
    const feed = await this.prepareFeed(orgId, watches);
    const lists = watches.some((w) => (w.gt_revision ?? 0) === 0);
    // A list from the snapshot costs references to shared bytes (bounded per watcher and in all by the
    // queue limits): only lists that page the database take turns.
    const fromMemory = feed.snapshot !== undefined && watches.every((w) => (w.gt_revision ?? 0) === 0);
    if (!lists || fromMemory) {
      if (fromMemory) this.metrics.listWaits.inc({ outcome: 'memory' });
      return { feed, listTurn: false };
    }
    try {
      this.metrics.listWaits.inc({ outcome: await this.admitList() });
      if (this.closing) throw shuttingDown();
    } catch (err) {
      feed.reservations--;
      this.release(feed);
      throw err;
    }
    return { feed, listTurn: true };
  }

  private async admitList(): Promise<'immediate' | 'waited'> {
    try {
      return await this.admission.acquire();
    } catch (err) {
      this.metrics.listWaits.inc({ outcome: 'refused' });
      throw err;
    }
  }

  private async prepareFeed(orgId: string, watches: readonly Watch[]): Promise<OrgFeed> {
    let feed = await this.feedFor(orgId);
    // Dropped between its lookup and now (its last watcher left): a new one takes its place.
    while (feed.closed) {
      if (this.closing) throw shuttingDown();
      feed = await this.feedFor(orgId);
    }
    feed.reservations++;
    try {
      if (!feed.exists) throw new ApiError('not_found', 'organization not found');
      // Compaction rings no bell: the cache learns of it only from fills and safety checks. A watch
      // the ring can't serve reads the database, so check it against the database's compacted revision.
      const ring = feed.ring;
      if (watches.some((w) => (w.gt_revision ?? 0) > 0 && !(ring?.covers(w.gt_revision ?? 0) ?? false))) {
        const h = (await this.store.readHeads([orgId])).get(orgId);
        if (h) feed.compacted = Math.max(feed.compacted, h.compacted);
      }
      for (const w of watches) {
        const gt = w.gt_revision ?? 0;
        if (gt > 0 && gt < feed.compacted) {
          throw new ApiError('revision_compacted', `gt_revision ${gt} of kind ${w.kind} is older than the compacted revision ${feed.compacted}; list again from 0`, {
            kind: w.kind,
            compacted_revision: feed.compacted,
          });
        }
      }
      // Shut down while this request waited: its stream would hold the server's close open.
      if (this.closing) throw shuttingDown();
      return feed;
    } catch (err) {
      feed.reservations--;
      this.release(feed);
      throw err;
    }
  }

  /**
   * Starts streaming on a socket whose request was validated and authorized
   * (with the feed `prepare` returned). Undefined when the client left meanwhile.
   */
  open(prepared: PreparedWatch, req: OpenStream): Watcher | undefined {
    const { feed, listTurn } = prepared;
    feed.reservations = Math.max(0, feed.reservations - 1);
    // Gone while the request was prepared: its 'close' was emitted already and would never reach a watcher.
    if (req.socket.destroyed || !req.socket.writable) {
      if (listTurn) this.admission.release();
      this.release(feed);
      return undefined;
    }
    req.socket.setNoDelay(true);
    req.socket.write(responseHead(MEDIA.watch));
    const watcher = new Watcher({
      shared: this.watcherShared,
      socket: req.socket,
      feed,
      watches: req.watches,
      startHead: feed.head,
      tokenId: req.tokenId,
      bufferLimit: this.settings.watchBufferLimit,
      slowConsumerTimeoutMs: this.settings.slowConsumerTimeout * 1000,
    });
    if (listTurn) this.listTurns.add(watcher);
    this.watchers.add(watcher);
    feed.listeners.add(watcher);
    if (req.deviceId !== undefined) {
      this.presence?.add(req.deviceId, req.orgId);
      this.deviceOf.set(watcher, req.deviceId);
    }
    if (req.tokenId !== undefined) {
      const held = this.byToken.get(req.tokenId);
      if (held === undefined) this.byToken.set(req.tokenId, watcher);
      else if (held instanceof Set) held.add(watcher);
      else this.byToken.set(req.tokenId, new Set([held, watcher]));
    }
    this.metrics.watchers.set(this.watchers.size);
    if (this.closing) watcher.close('unavailable', 'the server is shutting down; resume elsewhere');
    else watcher.pump();
    return watcher;
  }

  private remove(w: Watcher): void {
    this.watchers.delete(w);
    this.kernelGuard.forget(w);
    const device = this.deviceOf.get(w);
    if (device !== undefined) {
      this.deviceOf.delete(w);
      this.presence?.remove(device);
    }
    w.feed.listeners.delete(w);
    if (w.tokenId !== undefined) {
      const held = this.byToken.get(w.tokenId);
      if (held === w) this.byToken.delete(w.tokenId);
      else if (held instanceof Set) {
        held.delete(w);
        if (held.size === 0) this.byToken.delete(w.tokenId);
      }
    }
    this.metrics.watchers.set(this.watchers.size);
    this.release(w.feed);
  }

  /** Drops an organization's cache once it has no watchers. */
  private release(feed: OrgFeed): void {
    if (feed.listeners.size > 0 || feed.reservations > 0) return;
    void this.feeds.get(feed.orgId)?.then((current) => {
      if (current !== feed || feed.listeners.size > 0 || feed.reservations > 0) return;
      feed.close();
      this.feeds.delete(feed.orgId);
      this.metrics.feeds.set(this.feeds.size);
    });
  }

  /** The last line of defence against lost signals: one query for every cached organization. */
  async safetyCheck(): Promise<void> {
    const feeds = await Promise.all(this.feeds.values());
    if (feeds.length === 0) return;
    const heads = await this.store.readHeads(feeds.map((f) => f.orgId));
    for (const feed of feeds) {
      const h = heads.get(feed.orgId);
      if (!h || h.head > feed.head || h.compacted > feed.compacted) feed.signal();
    }
  }

  /** Ends the streams opened with these (revoked) tokens with `forbidden`. */
  closeRevoked(tokenIds: readonly string[]): void {
    for (const id of tokenIds) {
      const held = this.byToken.get(id);
      const streams = held === undefined ? [] : held instanceof Set ? [...held] : [held];
      for (const w of streams) w.close('forbidden', 'the token was revoked or expired');
    }
  }

  /**
   * The bound on bytes queued to all watchers together: past
   * `--watch-queue-limit`, the watchers with the most queued are closed with
   * `slow_consumer` (they resume from their last revision) until the total
   * is under it. Runs when a watcher pauses (at most every
   * QUEUE_CHECK_SPACING_MS) and with the bookmarks.
   */
  checkQueue(force = false): void {
    const now = performance.now();
    if (!force && now - this.lastQueueCheck < QUEUE_CHECK_SPACING_MS) return;
    this.lastQueueCheck = now;
    let total = 0;
    const held: [Watcher, number][] = [];
    for (const w of this.watchers) {
      const bytes = w.held;
      total += bytes;
      if (bytes > 0) held.push([w, bytes]);
    }
    this.metrics.queuedBytes.set(total);
    const limit = this.settings.watchQueueLimit;
    if (total <= limit) return;
    held.sort((a, b) => b[1] - a[1]);
    const before = total;
    let closed = 0;
    for (const [w, bytes] of held) {
      if (total <= limit) break;
      closed++;
      total -= bytes;
      w.close('slow_consumer', 'the server has too much queued for slow watchers; resume from your last revision');
    }
    this.logger.warn({ limit, held: before, closed, heaviest: held[0]?.[1] ?? 0 }, 'watch queue over its limit: closed the watchers holding the most');
  }

  private async checkKernel(): Promise<void> {
    if (this.watchers.size > 0) await this.kernelGuard.check();
  }

  bookmarks(): void {
    this.checkQueue(true);
    const idleMs = this.settings.bookmarkInterval * 1000 * 0.75;
    const now = performance.now();
    for (const w of this.watchers) {
      // Each sends only to the streams it is for: keepalives before the tails, bookmarks after them.
      w.keepAlive(now, idleMs);
      w.bookmark(now, idleMs);
    }
  }

  /**
   * SIGTERM: every stream gets `unavailable` and closes; new streams are
   * refused. A stream at its head gets a bookmark first, so its client
   * resumes every kind from there (docs/protocol.md "Watch").
   */
  async shutdown(): Promise<void> {
    this.closing = true;
    this.stop.abort();
    const now = performance.now();
    for (const w of [...this.watchers]) {
      // A kind moves only with its own events and the bookmarks, and a restarted server's ring starts at its head:
      // without this, a fleet resuming after a restart would read the database, one request per agent.
      w.bookmark(now, 0);
      w.close('unavailable', 'the server is shutting down; resume elsewhere');
    }
    await Promise.all(this.loops);
    for (const p of this.feeds.values()) (await p.catch(() => undefined))?.close();
    this.feeds.clear();
  }
}
