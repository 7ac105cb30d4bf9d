import type { Identified } from './guards.js';

/** What applying an event changed in the cache; nothing changed → no delta. */
export type CacheDelta<T> =
  | { type: 'add'; object: T }
  | { type: 'update'; old: T; object: T }
  | { type: 'delete'; object: T };

/**
 * An informer's local copy of one kind, keyed by id. Applies events only if
 * they are newer than what it holds, so a replayed or stale event changes
 * nothing. During a relist it remembers which ids the new listing confirmed,
 * so the end of the relist can delete exactly what vanished.
 * Its size is the number of live objects of the kind (no tombstones kept).
 */
export class ObjectCache<T extends Identified> {
  readonly #items = new Map<string, T>();
  #relistSeen: Set<string> | undefined;

  get size(): number {
    return this.#items.size;
  }

  get relisting(): boolean {
    return this.#relistSeen !== undefined;
  }

  get(id: string): T | undefined {
    return this.#items.get(id);
  }

  /** Snapshot in revision order. */
  list(): T[] {
    return [...this.#items.values()].sort((a, b) => a.revision - b.revision);
  }

  applyChange(object: T): CacheDelta<T> | undefined {
    this.#relistSeen?.add(object.id);
    const old = this.#items.get(object.id);
    if (old && object.revision <= old.revision) return undefined;
    this.#items.set(object.id, object);
    return old ? { type: 'update', old, object } : { type: 'add', object };
  }

  /** `last` is the delete event's value: the object's last state, at the revision of the delete. */
  applyDelete(last: T): CacheDelta<T> | undefined {
    const old = this.#items.get(last.id);
    if (!old || last.revision <= old.revision) return undefined;
    this.#items.delete(last.id);
    this.#relistSeen?.delete(last.id);
    return { type: 'delete', object: last };
  }

  /** Starts confirming every cached id against a listing from revision 0. */
  beginRelist(): void {
    this.#relistSeen = new Set();
  }

  /** Ends the relist (at the listing's tail): removes what the listing didn't confirm. */
  endRelist(): CacheDelta<T>[] {
    const seen = this.#relistSeen;
    if (!seen) return [];
    this.#relistSeen = undefined;
    const gone: CacheDelta<T>[] = [];
    for (const [id, object] of this.#items) {
      if (seen.has(id)) continue;
      this.#items.delete(id);
      gone.push({ type: 'delete', object });
    }
    return gone;
  }
}
