import type { WatchKind } from '../../protocol/index.js';

/** One change, encoded once for every watcher. */
export interface CachedEvent {
  readonly revision: number;
  readonly kind: WatchKind;
  readonly deleted: boolean;
  /** The complete chunk written to sockets. */
  readonly bytes: Buffer;
  /**
   * The same change as a `patch` line (complete chunk), when the feed held
   * the revision the write replaced and the patch is smaller: for watchers
   * that asked for patches (see WatchKinds.outgoing).
   */
  readonly patch?: Buffer;
  /** `bytes` as a `gzip` event, for watchers that take gzip, when the line is large and packs well (see encodeGzip). */
  readonly gzip?: Buffer;
  /** `patch` as a `gzip` event, likewise. */
  readonly gzipPatch?: Buffer;
}

/**
 * The last `capacity` events of one organization, in revision order. The ring
 * knows every change in (start, head]: a watcher at a position ≥ start can be
 * served from it; one below must read the database. When full, the oldest
 * event is dropped and `start` moves up to it.
 */
export class EventRing {
  private readonly items: (CachedEvent | undefined)[];
  private first = 0;
  private count = 0;
  private _start: number;
  private _head: number;

  constructor(
    readonly capacity: number,
    head: number,
  ) {
    this.items = new Array<CachedEvent | undefined>(capacity);
    this._start = head;
    this._head = head;
  }

  get start(): number {
    return this._start;
  }

  get head(): number {
    return this._head;
  }

  get size(): number {
    return this.count;
  }

  covers(position: number): boolean {
    return position >= this._start;
  }

  push(event: CachedEvent): void {
    if (event.revision <= this._head) throw new Error(`ring: revision ${event.revision} is not after head ${this._head}`);
    this._head = event.revision;
    if (this.capacity === 0) {
      this._start = event.revision;
      return;
    }
    if (this.count === this.capacity) {
      const evicted = this.items[this.first];
      this.items[this.first] = undefined;
      this.first = (this.first + 1) % this.capacity;
      this.count--;
      if (evicted) this._start = evicted.revision;
    }
    this.items[(this.first + this.count) % this.capacity] = event;
    this.count++;
  }

  /** Moves the head without an event (the database's head moved past the last cached event). */
  advance(head: number): void {
    if (head <= this._head) return;
    if (this.count === 0) this._start = head;
    this._head = head;
  }

  at(index: number): CachedEvent {
    const item = this.items[(this.first + index) % this.capacity];
    if (!item || index < 0 || index >= this.count) throw new RangeError(`ring index ${index} out of range`);
    return item;
  }

  /** Index of the first event with revision > `position` (size if none). */
  indexAfter(position: number): number {
    // Live watchers are one event behind the head, the fan-out's every call: no search for them.
    const last = this.count - 1;
    if (last < 0 || this.at(last).revision <= position) return this.count;
    if (last === 0 || this.at(last - 1).revision <= position) return last;
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.at(mid).revision <= position) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
