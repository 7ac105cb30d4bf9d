import type { WatchKind } from '../../protocol/index.js';
import type { ChangeBatch, Store } from '../store/index.js';
import { encodeObjectEvent } from './encode.js';
import type { WatchMetrics } from './watch-metrics.js';

/** Rows a watcher behind the tail cache reads per query. */
export const CATCH_UP_PAGE = 500;

/** One page of an organization's changes after a position, read once; each row is encoded at most once, when first sent. */
export class CatchUpPage {
  readonly #bytes: (Buffer | undefined)[] = [];

  constructor(
    readonly batch: ChangeBatch,
    /** Issue number of the read (see CatchUpReads). */
    readonly issued: number,
  ) {}

  /** The watch event of row `i`, the same buffer for every watcher that sends it. */
  bytes(i: number): Buffer {
    const cached = this.#bytes[i];
    if (cached) return cached;
    const row = this.batch.rows[i];
    if (!row) throw new RangeError(`row ${i} of a page of ${this.batch.rows.length}`);
    const bytes = encodeObjectEvent(row.kind, row.deleted ? 'delete' : 'change', row.value);
    this.#bytes[i] = bytes;
    return bytes;
  }
}

/** Completed reads are kept this long for watchers arriving just after (a reconnect storm spreads over seconds). */
const RETAIN_MS = 1_000;
/** Positions per organization whose latest read is kept. */
const MAX_KEPT = 4;

interface Read {
  page: Promise<CatchUpPage>;
  /** Issue number: every watcher marked before it gets a snapshot at least as new as its start. */
  issued: number;
  expiry: NodeJS.Timeout | undefined;
}

/** What a watcher can use from a shared read. */
export interface PageNeeds {
  /** The stream's `mark()` when it opened: a read issued after it is as fresh as the stream needs. */
  openedMark: number;
  /** Issue number of the last page the stream used: only a newer read makes progress. */
  lastIssued: number;
  /** Still in its initial list: only a read issued after the stream opened will do. */
  listing: boolean;
  /** The highest revision the client already has (its largest `gt_revision`). */
  knownRevision: number;
}

/**
 * The database catch-up reads of one organization, shared: watchers behind
 * the tail cache at the same position, asking for the same kinds, share one
 * query per page and one encoding per row. N agents resuming from the same
 * revision cost about one query per page and second, not N.
 *
 * The latest read per (position, kinds) is shared while in flight and for
 * RETAIN_MS after, with the watchers it serves as well as a fresh one
 * (`PageNeeds`). Each rule keeps a stream correct with a snapshot older
 * than its start:
 * - newer than the last page it used, else it makes no progress;
 * - for an initial list, issued after it opened: the list drops deletes up
 *   to its start head, so an older snapshot could show it an object whose
 *   delete it then never gets;
 * - holding every revision the client already has (head ≥ its largest
 *   `gt_revision`), else its tails would run ahead of events still to come.
 * Otherwise an older snapshot only means the stream reads on from its head.
 *
 * Memory: at most MAX_KEPT pages (CATCH_UP_PAGE rows and their encodings)
 * per organization beyond those watchers are sending; the oldest goes first.
 */
export class CatchUpReads {
  #issued = 0;
  readonly #kept = new Map<string, Read>();

  constructor(
    private readonly orgId: string,
    private readonly store: Store,
    private readonly metrics: WatchMetrics,
  ) {}

  /** For a watcher opening now: reads issued after this mark see at least the head it started at. */
  mark(): number {
    return this.#issued;
  }

  /** The page of changes after `position` of `kinds` (sorted, no repeats), from a read that meets `needs`. */
  async read(position: number, kinds: readonly WatchKind[], needs: PageNeeds): Promise<CatchUpPage> {
    const key = `${position}|${kinds.join(',')}`;
    let after = needs.listing ? Math.max(needs.lastIssued, needs.openedMark) : needs.lastIssued;
    for (;;) {
      const kept = this.#kept.get(key);
      if (!kept || kept.issued <= after) return this.issue(key, position, kinds);
      const page = await kept.page;
      if (page.issued > needs.openedMark || page.batch.head >= needs.knownRevision) return page;
      // Each turn asks for a newer read: at worst the next one is this caller's own.
      after = page.issued;
    }
  }

  /** Drops what is kept (the feed closes). */
  close(): void {
    for (const r of this.#kept.values()) clearTimeout(r.expiry);
    this.#kept.clear();
  }

  private issue(key: string, position: number, kinds: readonly WatchKind[]): Promise<CatchUpPage> {
    this.metrics.catchUpQueries.inc();
    const issued = ++this.#issued;
    const page = this.store.changes.read(this.orgId, position, CATCH_UP_PAGE, kinds).then((batch) => new CatchUpPage(batch, issued));
    const read: Read = { page, issued, expiry: undefined };
    const old = this.#kept.get(key);
    if (old) this.drop(key, old);
    this.#kept.set(key, read);
    for (const [k, r] of this.#kept) {
      if (this.#kept.size <= MAX_KEPT) break;
      this.drop(k, r);
    }
    page.then(
      () => {
        if (this.#kept.get(key) !== read) return;
        read.expiry = setTimeout(() => this.drop(key, read), RETAIN_MS);
        read.expiry.unref();
      },
      // The callers get the failure; whoever asks next reads again.
      () => this.drop(key, read),
    );
    return page;
  }

  private drop(key: string, read: Read): void {
    clearTimeout(read.expiry);
    if (this.#kept.get(key) === read) this.#kept.delete(key);
  }
}
