import type { Logger } from 'pino';
import type { Store, ChangeRow } from '../store/index.js';
import type { Subscription } from '../bus/index.js';
import { CatchUpReads } from './catch-up-reads.js';
import { EventRing, type CachedEvent } from './event-ring.js';
import { OrgSnapshot, type SnapshotBudget } from './org-snapshot.js';
import { encodeBookmark, encodeGzip, encodeObjectEvent } from './encode.js';
import { encodePatch } from './patch-event.js';
import type { WatchMetrics } from './watch-metrics.js';

/** What a feed needs from a watcher: it is woken when new events are in the ring. */
export interface FeedListener {
  /** Called synchronously after events were appended (or the head moved); `now` is when (performance.now()). */
  onFeed(now: number): void;
}

/** Rows read per fill query; a fill that gets this many reads again. */
export const FILL_PAGE = 1000;

/**
 * One organization's tail cache: the ring of its last events, filled by one
 * query per signal however many watchers it has (single flight), and the
 * watchers it wakes. Lives while the organization has watchers on this
 * replica. Its lifecycle is its own:
 * - `acquire` holds it for a stream being prepared; `release` gives that
 *   back, and `attach` turns it into a listener (the stream opened);
 *   `detach` drops a listener;
 * - `idle` says nothing holds it: its owner may then `close` it, after
 *   which it is never filled again and takes no stream.
 */
export class OrgFeed {
  ring: EventRing | undefined;
  exists = true;
  #compacted = 0;
  readonly #listeners = new Set<FeedListener>();
  /** Streams prepared on this feed and not yet opened: the feed is kept for them as for listeners. */
  #reservations = 0;
  /** Database reads of the watchers behind the ring, shared between them. */
  readonly catchUp: CatchUpReads;
  /** Dropped (no watchers, or shutdown): it is no longer filled and must not take watchers. */
  closed = false;
  /** Live objects at the ring's head, for initial lists; undefined when over the budget (lists page the database). */
  snapshot: OrgSnapshot | undefined;
  private filling: Promise<void> | undefined;
  private again = false;
  private subscription: Subscription | undefined;
  private bookmark: { revision: number; bytes: Buffer } | undefined;
  /** When the first not-yet-filled signal arrived, for the fan-out latency. */
  private signalledAt: number | undefined;

  constructor(
    readonly orgId: string,
    private readonly store: Store,
    private readonly capacity: number,
    private readonly metrics: WatchMetrics,
    private readonly logger: Logger,
    private readonly budget?: SnapshotBudget,
  ) {
    this.catchUp = new CatchUpReads(orgId, store, metrics);
  }

  /**
   * Reads the head, with every live object when the snapshot budget has room
   * (one query either way), and starts listening. Called once, before use.
   */
  async start(subscribe: (onWake: () => void) => Subscription): Promise<void> {
    // Subscribe before reading the head, so a change committed in between still wakes us.
    this.subscription = subscribe(() => this.signal());
    let h: { head: number; compacted: number } | undefined;
    if (this.budget && this.budget.used < this.budget.limit) {
      const live = await this.store.changes.live(this.orgId);
      this.metrics.snapshotQueries.inc();
      if (live.exists) h = live;
      if (live.exists) this.snapshot = this.build(live.rows);
    } else {
      h = (await this.store.changes.heads([this.orgId])).get(this.orgId);
    }
    this.exists = h !== undefined;
    this.ring = new EventRing(this.capacity, h?.head ?? 0);
    this.#compacted = h?.compacted ?? 0;
    // A signal that came while the head was read had no ring to fill; its change may be past that head.
    if (this.signalledAt !== undefined) void this.fill();
  }

  get head(): number {
    return this.ring?.head ?? 0;
  }

  /** The organization's compacted revision, as far as this feed has seen it. */
  get compacted(): number {
    return this.#compacted;
  }

  /** A compacted revision read elsewhere (the database, when a resume falls outside the ring). */
  noteCompacted(revision: number): void {
    this.#compacted = Math.max(this.#compacted, revision);
  }

  /** Holds the feed for a stream being prepared; undone by `release`, or turned into a listener by `attach`. */
  acquire(): void {
    this.#reservations++;
  }

  /** Gives back what `acquire` took (the request failed or its client left). */
  release(): void {
    this.#reservations = Math.max(0, this.#reservations - 1);
  }

  /** The prepared stream opened: its hold becomes a listener, woken after each fill. */
  attach(listener: FeedListener): void {
    this.release();
    this.#listeners.add(listener);
  }

  detach(listener: FeedListener): void {
    this.#listeners.delete(listener);
  }

  /** Nothing holds the feed: no listener, no stream being prepared. */
  get idle(): boolean {
    return this.#listeners.size === 0 && this.#reservations === 0;
  }

  /** A signal arrived (or the safety check saw a newer head): fill once, however many signals. */
  signal(): void {
    this.signalledAt ??= performance.now();
    // Before start() has read the head there is nothing to fill from; start() fills then.
    if (this.ring) void this.fill();
  }

  fill(): Promise<void> {
    if (this.filling) {
      this.again = true;
      return this.filling;
    }
    this.filling = this.fillLoop().finally(() => {
      this.filling = undefined;
    });
    return this.filling;
  }

  private async fillLoop(): Promise<void> {
    do {
      this.again = false;
      const ring = this.ring;
      if (!ring) return;
      const since = this.signalledAt;
      this.signalledAt = undefined;
      const from = ring.head;
      let batch;
      try {
        batch = await this.store.changes.read(this.orgId, ring.head, FILL_PAGE);
      } catch (err) {
        this.logger.error({ err, org: this.orgId }, 'tail cache fill failed; the safety check will retry');
        return;
      }
      this.metrics.fillQueries.inc();
      this.exists = batch.exists && !batch.deleted;
      this.noteCompacted(batch.compacted);
      for (const row of batch.rows) {
        if (row.revision <= ring.head) continue;
        const event = this.#packed(this.encode(row, this.snapshot?.current(row.kind, row.id)));
        ring.push(event);
        if (this.snapshot && !this.snapshot.apply(row.id, event)) this.dropSnapshot();
        this.metrics.changes.inc();
      }
      const more = batch.rows.length === FILL_PAGE;
      if (!more) ring.advance(batch.head);
      else this.again = true;
      if (ring.head > from && !this.closed) this.metrics.fanOutTimes.reached(this.orgId, from, ring.head, performance.now());
      this.wake();
      if (since !== undefined) this.metrics.fanoutSeconds.observe((performance.now() - since) / 1000);
    } while (this.again);
  }

  private build(rows: readonly ChangeRow[]): OrgSnapshot | undefined {
    if (!this.budget) return undefined;
    const snapshot = new OrgSnapshot(this.budget);
    for (const row of rows) {
      if (!snapshot.apply(row.id, this.encode(row))) {
        snapshot.release();
        this.logger.warn({ org: this.orgId, objects: rows.length, budget: this.budget.limit }, 'organization over the snapshot budget: its lists page the database');
        return undefined;
      }
    }
    return snapshot;
  }

  private dropSnapshot(): void {
    this.logger.warn({ org: this.orgId, budget: this.budget?.limit }, 'organization grew over the snapshot budget: its lists page the database');
    this.snapshot?.release();
    this.snapshot = undefined;
  }

  /** `previous`: the object's last change event, when the snapshot holds it (then a patch may be made). */
  encode(row: ChangeRow, previous?: Buffer): CachedEvent {
    const bytes = encodeObjectEvent(row.kind, row.deleted ? 'delete' : 'change', row.value);
    const patch = previous && !row.deleted ? this.#patch(row, previous, bytes.length) : undefined;
    return { revision: row.revision, kind: row.kind, deleted: row.deleted, bytes, ...(patch ? { patch } : {}) };
  }

  /** A change the fan-out writes, with its gzip forms: packed once here, not per watcher. Lists and catch-up send plain lines. */
  #packed(event: CachedEvent): CachedEvent {
    const gzip = encodeGzip(event.kind, event.revision, event.bytes);
    const gzipPatch = event.patch ? encodeGzip(event.kind, event.revision, event.patch) : undefined;
    if (!gzip && !gzipPatch) return event;
    return { ...event, ...(gzip ? { gzip } : {}), ...(gzipPatch ? { gzipPatch } : {}) };
  }

  #patch(row: ChangeRow, previous: Buffer, fullBytes: number): Buffer | undefined {
    try {
      return encodePatch(row.kind, previous, row.value, row.previousRevision, fullBytes);
    } catch (err) {
      // Watchers then get the whole object, which is always right.
      this.logger.error({ err, org: this.orgId, kind: row.kind, id: row.id }, 'could not encode a change as a patch; sending the whole object');
      return undefined;
    }
  }

  /** The bookmark chunk for `revision`, shared by every watcher at that position. */
  bookmarkBytes(revision: number): Buffer {
    if (this.bookmark?.revision !== revision) this.bookmark = { revision, bytes: encodeBookmark(revision) };
    return this.bookmark.bytes;
  }

  wake(): void {
    // One clock read for the whole fan-out: per watcher it was a measurable part of a write's cost.
    const now = performance.now();
    for (const l of this.#listeners) l.onFeed(now);
  }

  close(): void {
    this.closed = true;
    this.metrics.fanOutTimes.forget(this.orgId);
    this.subscription?.close();
    this.subscription = undefined;
    this.catchUp.close();
    this.snapshot?.release();
    this.snapshot = undefined;
    this.ring = undefined;
    this.#listeners.clear();
  }
}
