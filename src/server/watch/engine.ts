import type { FastifyReply } from 'fastify';
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
import type { WatchMetrics } from './watch-metrics.js';
import { startResponse, type StreamOwner, type StreamSocket } from '../streams/index.js';

export interface OpenStream {
  orgId: string;
  watches: readonly Watch[];
  tokenId: string | undefined;
  /** The device whose own token opened the stream: it counts as connected while the stream is open. */
  deviceId: string | undefined;
  /** Called with the stream's socket once its watcher exists, before anything of the list is written: a page stream's other lines join here. */
  alongside?(socket: StreamSocket): void;
}

/** A watch request checked by `prepare`, to be opened with `open` (or given back with `abandon`). */
export interface PreparedWatch {
  readonly feed: OrgFeed;
  /** The request holds an initial-list turn, released when its stream reaches the head or ends. */
  readonly listTurn: boolean;
}

/** Where watch streams opened with a device token are counted (the fleet module's presence). */
export interface StreamPresence {
  add(deviceId: string, orgId: string): void;
  remove(deviceId: string): void;
}

/**
 * The watch engine of one replica: a tail cache per organization with
 * watchers, filled on bus signals; periodic safety re-reads of head
 * revisions and bookmarks on idle streams. Its watchers are streams of the
 * stream owner, which opens them, bounds their bytes together and in the
 * kernel, and ends them on revocation and shutdown.
 */
export class WatchEngine {
  private readonly feeds = new Map<string, Promise<OrgFeed>>();
  private readonly watchers = new Set<Watcher>();
  private readonly deviceOf = new Map<Watcher, string>();
  private readonly stop = new AbortController();
  private loops: Promise<void>[] = [];
  private closing = false;
  /** Memory the organizations' snapshots share (`--snapshot-budget`). */
  readonly snapshotBudget: SnapshotBudget;
  readonly admission: ListAdmission;
  private readonly listTurns = new Set<Watcher>();
  /** What every watcher shares (settings, metrics, callbacks): one object, not one per stream. */
  private readonly watcherShared: WatcherShared;

  constructor(
    private readonly store: Store,
    private readonly bus: SignalBus,
    private readonly settings: Settings,
    private readonly metrics: WatchMetrics,
    private readonly logger: Logger,
    private readonly owner: StreamOwner,
    private readonly presence?: StreamPresence,
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
    this.watcherShared = {
      store,
      metrics,
      logger,
      onListed: (w) => {
        if (this.listTurns.delete(w)) this.admission.release();
      },
      onPaused: () => owner.checkQueue(),
      kernel: owner.kernelGuard,
      onClose: (w) => {
        this.remove(w);
        owner.release(w);
      },
    };
  }

  start(): void {
    const s = this.settings;
    const onError = (what: string) => (err: unknown) => this.logger.error({ err }, `${what} failed`);
    this.loops = [
      runPeriodically(s.safetyCheckInterval * 1000, this.stop.signal, () => this.safetyCheck(), onError('watch safety check')),
      runPeriodically((s.bookmarkInterval * 1000) / 4, this.stop.signal, async () => this.bookmarks(), onError('bookmarks')),
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
  private get isClosing(): boolean {
    return this.closing || this.owner.closing;
  }

  async prepare(orgId: string, watches: readonly Watch[]): Promise<PreparedWatch> {
    if (this.isClosing) throw shuttingDown();
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
      if (this.isClosing) throw shuttingDown();
    } catch (err) {
      feed.release();
      this.dropIfIdle(feed);
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
      if (this.isClosing) throw shuttingDown();
      feed = await this.feedFor(orgId);
    }
    feed.acquire();
    try {
      if (!feed.exists) throw new ApiError('not_found', 'organization not found');
      // Compaction rings no bell: the cache learns of it only from fills and safety checks. A watch
      // the ring can't serve reads the database, so check it against the database's compacted revision.
      const ring = feed.ring;
      if (watches.some((w) => (w.gt_revision ?? 0) > 0 && !(ring?.covers(w.gt_revision ?? 0) ?? false))) {
        const h = (await this.store.changes.heads([orgId])).get(orgId);
        if (h) feed.noteCompacted(h.compacted);
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
      if (this.isClosing) throw shuttingDown();
      return feed;
    } catch (err) {
      feed.release();
      this.dropIfIdle(feed);
      throw err;
    }
  }

  /**
   * Starts streaming on the reply of a request that was validated and
   * authorized (with the feed `prepare` returned), through the stream owner.
   * Undefined when the client left meanwhile.
   */
  open(reply: FastifyReply, prepared: PreparedWatch, req: OpenStream): Watcher | undefined {
    const { feed, listTurn } = prepared;
    let watcher: Watcher | undefined;
    try {
      watcher = this.owner.open(reply, (socket) => {
        // Gone while the request was prepared: its 'close' was emitted already and would never reach a watcher.
        if (socket.destroyed || !socket.writable) return undefined;
        socket.setNoDelay(true);
        startResponse(socket, MEDIA.watch);
        const w = new Watcher({
          shared: this.watcherShared,
          socket,
          feed,
          watches: req.watches,
          startHead: feed.head,
          tokenId: req.tokenId,
          bufferLimit: this.settings.watchBufferLimit,
          slowConsumerTimeoutMs: this.settings.slowConsumerTimeout * 1000,
        });
        this.add(w, req, listTurn);
        this.owner.guard(w);
        req.alongside?.(socket);
        return w;
      });
    } finally {
      if (!watcher) {
        if (listTurn) this.admission.release();
        feed.release();
        this.dropIfIdle(feed);
      }
    }
    if (watcher && !watcher.closed) watcher.pump();
    return watcher;
  }

  private add(watcher: Watcher, req: OpenStream, listTurn: boolean): void {
    if (listTurn) this.listTurns.add(watcher);
    this.watchers.add(watcher);
    watcher.feed.attach(watcher);
    if (req.deviceId !== undefined) {
      this.presence?.add(req.deviceId, req.orgId);
      this.deviceOf.set(watcher, req.deviceId);
    }
    this.metrics.watchers.set(this.watchers.size);
  }

  private remove(w: Watcher): void {
    this.watchers.delete(w);
    const device = this.deviceOf.get(w);
    if (device !== undefined) {
      this.deviceOf.delete(w);
      this.presence?.remove(device);
    }
    w.feed.detach(w);
    this.metrics.watchers.set(this.watchers.size);
    this.dropIfIdle(w.feed);
  }

  /** Drops an organization's cache once it has no watchers. */
  private dropIfIdle(feed: OrgFeed): void {
    if (!feed.idle) return;
    void this.feeds.get(feed.orgId)?.then((current) => {
      if (current !== feed || !feed.idle) return;
      feed.close();
      this.feeds.delete(feed.orgId);
      this.metrics.feeds.set(this.feeds.size);
    });
  }

  /** The last line of defence against lost signals: one query for every cached organization. */
  async safetyCheck(): Promise<void> {
    const feeds = await Promise.all(this.feeds.values());
    if (feeds.length === 0) return;
    const heads = await this.store.changes.heads(feeds.map((f) => f.orgId));
    for (const feed of feeds) {
      const h = heads.get(feed.orgId);
      if (!h || h.head > feed.head || h.compacted > feed.compacted) feed.signal();
    }
  }

  bookmarks(): void {
    const idleMs = this.settings.bookmarkInterval * 1000 * 0.75;
    const now = performance.now();
    for (const w of this.watchers) {
      // Each sends only to the streams it is for: keepalives before the tails, bookmarks after them.
      w.keepAlive(now, idleMs);
      w.bookmark(now, idleMs);
    }
  }

  /**
   * SIGTERM, once the stream owner ended the streams (each at its head with
   * a bookmark first, docs/protocol.md "Watch"): new streams are refused,
   * the loops stop and the tail caches close.
   */
  async shutdown(): Promise<void> {
    this.closing = true;
    this.stop.abort();
    await Promise.all(this.loops);
    for (const p of this.feeds.values()) (await p.catch(() => undefined))?.close();
    this.feeds.clear();
  }
}
