/**
 * Observed state waiting to go up (RFD 28's "periodic sync of what is
 * dirty"): one pending value per key, sent by a flush.
 *
 * - `mark(key, value)` makes the key dirty with `value`; marking it again
 *   before a flush replaces the value (updates coalesce).
 * - `flush(send)` hands every dirty entry to `send` at once. On success the
 *   entries are clean, except those marked again during the send (they stay
 *   dirty with their newer value). On failure every entry stays dirty and the
 *   whole set is sent again by a later flush; the error is rethrown.
 * - `delete(key)` forgets the key for good: its pending value is dropped and
 *   later marks are ignored, so nothing is ever sent (or re-sent) after a
 *   delete. A send already in flight can't be recalled, but is not retried.
 * - Limits: at most `maxKeys` dirty keys (marking a new key beyond it throws
 *   RangeError: the owner has more keys than it said); deleted keys are
 *   remembered up to `maxDeleted`, the oldest forgotten first.
 */
export class DirtySet<K, V> {
  readonly #dirty = new Map<K, { value: V; version: number }>();
  readonly #deleted = new Set<K>();
  readonly #maxKeys: number;
  readonly #maxDeleted: number;
  #version = 0;
  #flushing = false;

  constructor(limits: { maxKeys?: number; maxDeleted?: number } = {}) {
    this.#maxKeys = limits.maxKeys ?? 10_000;
    this.#maxDeleted = limits.maxDeleted ?? 10_000;
  }

  /** Dirty keys. */
  get size(): number {
    return this.#dirty.size;
  }

  isDirty(key: K): boolean {
    return this.#dirty.has(key);
  }

  isDeleted(key: K): boolean {
    return this.#deleted.has(key);
  }

  /** Makes `key` dirty with `value`; false (and nothing marked) when the key was deleted. */
  mark(key: K, value: V): boolean {
    if (this.#deleted.has(key)) return false;
    if (!this.#dirty.has(key) && this.#dirty.size >= this.#maxKeys) {
      throw new RangeError(`the dirty set holds its limit of ${this.#maxKeys} keys`);
    }
    this.#dirty.set(key, { value, version: ++this.#version });
    return true;
  }

  delete(key: K): void {
    this.#dirty.delete(key);
    this.#deleted.add(key);
    if (this.#deleted.size > this.#maxDeleted) {
      const oldest = this.#deleted.values().next();
      if (!oldest.done) this.#deleted.delete(oldest.value);
    }
  }

  /**
   * Sends every dirty entry through `send` (not called when none is dirty).
   * Flushes don't overlap: a flush while one is in flight returns false at
   * once (its entries go with the next). Resolves true when a send succeeded.
   */
  async flush(send: (entries: ReadonlyMap<K, V>) => Promise<void>): Promise<boolean> {
    if (this.#flushing || this.#dirty.size === 0) return false;
    const taken = new Map(this.#dirty);
    this.#flushing = true;
    try {
      await send(new Map([...taken].map(([k, e]) => [k, e.value])));
    } finally {
      this.#flushing = false;
    }
    for (const [key, entry] of taken) {
      if (this.#dirty.get(key)?.version === entry.version) this.#dirty.delete(key);
    }
    return true;
  }
}
