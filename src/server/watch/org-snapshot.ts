import type { WatchKind } from '../../protocol/index.js';
import type { CachedEvent } from './event-ring.js';

/**
 * What one object costs a snapshot beyond its encoded bytes: the map entry,
 * its entry object and its Buffer object (a view of its kind's list once
 * listed). Used to charge the per-replica budget. Measured on Node 20 (heap
 * and array buffers after GC, 20,000 devices of 521 encoded bytes): 764
 * bytes each, so about 243 beyond the bytes.
 */
export const SNAPSHOT_OBJECT_OVERHEAD = 250;

/** The bytes all snapshots of a replica may hold together (`--snapshot-budget`). */
export class SnapshotBudget {
  #used = 0;

  constructor(readonly limit: number) {}

  get used(): number {
    return this.#used;
  }

  /** Takes `bytes` if they fit; false (nothing taken) when they don't. */
  take(bytes: number): boolean {
    if (this.#used + bytes > this.limit) return false;
    this.#used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.#used = Math.max(0, this.#used - bytes);
  }
}

/** A kind's list as last built: the bytes its objects' entries are views of, while any is. */
interface ListBase {
  readonly bytes: Buffer;
  /** Entries whose bytes are a view of this list. */
  views: number;
}

/** One live object: its encoded change event, in a buffer of its own (as the fill made it) or as a view of its kind's list. */
interface Entry {
  bytes: Buffer;
  base: ListBase | undefined;
}

/**
 * Every live object of one organization at the feed's head, each as the
 * change event the fill encoded once (the bytes the ring holds), by kind in
 * revision order. Initial lists are written from it: the buffer `list`
 * returns is shared by every watcher listing between two changes, so a
 * joiner holds references to it, never copies.
 *
 * Each object's bytes are held once: building a kind's list makes its
 * entries views of the list, and the buffers the fill made go (but those
 * the ring still holds). A list stays in memory while an entry is a view of
 * it, after the kind changed too, until the next list is built.
 *
 * Kept current by the feed's fill (`apply` for every row, in revision
 * order), so it is consistent with the ring's head. It charges what it
 * holds to the budget; `apply` returns false when the budget can't take a
 * change, and the feed then drops the snapshot (lists page the database
 * again).
 */
export class OrgSnapshot {
  readonly #byKind = new Map<WatchKind, Map<string, Entry>>();
  /** Each kind's list, until the kind changes. */
  readonly #lists = new Map<WatchKind, ListBase>();
  #bytes = 0;
  #released = false;

  constructor(private readonly budget: SnapshotBudget) {}

  /** Bytes charged to the budget. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Live objects of one kind. */
  count(kind: WatchKind): number {
    return this.#byKind.get(kind)?.size ?? 0;
  }

  get size(): number {
    let n = 0;
    for (const m of this.#byKind.values()) n += m.size;
    return n;
  }

  /** The change event the object's current state was sent as, if it is live. */
  current(kind: WatchKind, id: string): Buffer | undefined {
    return this.#byKind.get(kind)?.get(id)?.bytes;
  }

  /** Applies one change (revisions in increasing order); false when the budget can't take it. */
  apply(id: string, event: CachedEvent): boolean {
    let objects = this.#byKind.get(event.kind);
    if (!objects) this.#byKind.set(event.kind, (objects = new Map()));
    const old = objects.get(id);
    if (old) {
      // Deleted and set again so the map's order stays revision order.
      objects.delete(id);
      this.#release(old);
      this.#charge(-SNAPSHOT_OBJECT_OVERHEAD);
    }
    this.#lists.delete(event.kind);
    if (event.deleted) return true;
    if (!this.#charge(event.bytes.length + SNAPSHOT_OBJECT_OVERHEAD)) return false;
    objects.set(id, { bytes: event.bytes, base: undefined });
    return true;
  }

  /**
   * The kind's change events in revision order, as one buffer: the same
   * bytes for every caller until the kind changes (built at most once per
   * change, when a list asks). Watchers write slices of it, so a list costs a
   * few writes, not one per object.
   */
  list(kind: WatchKind): Buffer {
    const built = this.#lists.get(kind);
    if (built) return built.bytes;
    const entries = [...(this.#byKind.get(kind)?.values() ?? [])];
    const bytes = Buffer.concat(
      entries.map((e) => e.bytes),
      entries.reduce((n, e) => n + e.bytes.length, 0),
    );
    // Over the budget the list is still served, and its objects keep their bytes (the snapshot is dropped at the next change that doesn't fit).
    if (!this.#charge(bytes.length)) return bytes;
    const base: ListBase = { bytes, views: 0 };
    let at = 0;
    for (const e of entries) {
      const length = e.bytes.length;
      this.#release(e);
      e.bytes = bytes.subarray(at, at + length);
      e.base = base;
      base.views++;
      at += length;
    }
    this.#lists.set(kind, base);
    return bytes;
  }

  /** Gives its bytes back to the budget (the feed closes or drops it). Idempotent. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.budget.give(this.#bytes);
    this.#bytes = 0;
    this.#byKind.clear();
    this.#lists.clear();
  }

  /** Stops charging an entry's bytes: its own, or its share of the list it is a view of (the list's when it was the last view). */
  #release(e: Entry): void {
    const base = e.base;
    if (base === undefined) {
      this.#charge(-e.bytes.length);
      return;
    }
    e.base = undefined;
    base.views--;
    if (base.views === 0) this.#charge(-base.bytes.length);
  }

  #charge(bytes: number): boolean {
    if (bytes > 0 && !this.budget.take(bytes)) return false;
    if (bytes < 0) this.budget.give(-bytes);
    this.#bytes += bytes;
    return true;
  }
}
