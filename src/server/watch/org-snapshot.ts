import type { WatchKind } from '../../protocol/index.js';
import type { CachedEvent } from './event-ring.js';

/**
 * What one object costs a snapshot beyond its encoded bytes: the map entry,
 * the CachedEvent, the Buffer object and its slot in the shared list. Used
 * to charge the per-replica budget. Measured on Node 20 (heap and array
 * buffers after GC, 20,000 devices of 521 encoded bytes): 764 bytes each,
 * so about 243 beyond the bytes.
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

/**
 * Every live object of one organization at the feed's head, each as the
 * change event the fill encoded once (the same Buffer the ring holds), by
 * kind in revision order. Initial lists are written from it: the buffer
 * `list` returns is shared by every watcher listing between two changes,
 * so a joiner holds references to it, never copies.
 *
 * Kept current by the feed's fill (`apply` for every row, in revision
 * order), so it is consistent with the ring's head. It charges its bytes to
 * the budget; `apply` returns false when the budget can't take a change, and
 * the feed then drops the snapshot (lists page the database again).
 */
export class OrgSnapshot {
  readonly #byKind = new Map<WatchKind, Map<string, CachedEvent>>();
  readonly #lists = new Map<WatchKind, Buffer>();
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

  /** Applies one change (revisions in increasing order); false when the budget can't take it. */
  apply(id: string, event: CachedEvent): boolean {
    let objects = this.#byKind.get(event.kind);
    if (!objects) this.#byKind.set(event.kind, (objects = new Map()));
    const old = objects.get(id);
    if (old) {
      // Deleted and set again so the map's order stays revision order.
      objects.delete(id);
      this.#charge(-cost(old));
    }
    this.#dropList(event.kind);
    if (event.deleted) return true;
    if (!this.#charge(cost(event))) return false;
    objects.set(id, event);
    return true;
  }

  /**
   * The kind's change events in revision order, as one buffer: the same
   * bytes for every caller until the kind changes (built at most once per
   * change, when a list asks). Watchers write slices of it, so a list costs a
   * few writes, not one per object. Its bytes are charged to the budget too.
   */
  list(kind: WatchKind): Buffer {
    let list = this.#lists.get(kind);
    if (!list) {
      const events = [...(this.#byKind.get(kind)?.values() ?? [])];
      list = Buffer.concat(
        events.map((e) => e.bytes),
        events.reduce((n, e) => n + e.bytes.length, 0),
      );
      // Over the budget the list is still served (the snapshot is dropped at the next change that doesn't fit).
      if (this.#charge(list.length)) this.#lists.set(kind, list);
    }
    return list;
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

  #dropList(kind: WatchKind): void {
    const list = this.#lists.get(kind);
    if (!list) return;
    this.#lists.delete(kind);
    this.#charge(-list.length);
  }

  #charge(bytes: number): boolean {
    if (bytes > 0 && !this.budget.take(bytes)) return false;
    if (bytes < 0) this.budget.give(-bytes);
    this.#bytes += bytes;
    return true;
  }
}

function cost(e: CachedEvent): number {
  return e.bytes.length + SNAPSHOT_OBJECT_OVERHEAD;
}
