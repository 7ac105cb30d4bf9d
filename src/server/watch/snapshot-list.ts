import type { WatchKind } from '../../protocol/index.js';
import { CHUNK_END } from '../streams/index.js';
import type { OrgSnapshot } from './org-snapshot.js';

/**
 * Bytes an initial list from the snapshot may have queued in its socket
 * before writing pauses until drain: what a stalled joiner holds is this
 * many bytes of references to shared buffers, whatever its organization's size.
 */
export const LIST_HIGH_WATER = 256 * 1024;

/** Smallest slice written while listing, so a nearly full socket still makes progress per drain. */
const LIST_MIN_SLICE = 16 * 1024;

/**
 * One stream's initial list from an organization's snapshot: the snapshot's
 * shared list buffers (one per kind) and how far the stream was written.
 * It is written in slices that are views of those buffers, not copies.
 */
export class SnapshotList {
  readonly #lists: readonly Buffer[];
  /** Objects in the list, counted as events once it was all written. */
  readonly objects: number;
  #list = 0;
  #offset = 0;

  constructor(
    snapshot: OrgSnapshot,
    kinds: readonly WatchKind[],
    /** The snapshot's head: the list holds everything up to it. */
    readonly head: number,
  ) {
    this.#lists = kinds.map((k) => snapshot.list(k));
    this.objects = kinds.reduce((n, k) => n + snapshot.count(k), 0);
  }

  /**
   * The next slice to write to a socket that has `queued` bytes and may
   * hold `limit`; undefined once everything was written. It ends where a
   * chunk ends. The cursor moves only with `wrote`.
   */
  next(queued: number, limit: number): Buffer | undefined {
    for (; this.#list < this.#lists.length; this.#list++, this.#offset = 0) {
      const list = this.#lists[this.#list];
      if (!list || this.#offset >= list.length) continue;
      const want = Math.min(list.length, this.#offset + Math.max(LIST_MIN_SLICE, limit - queued));
      // A slice ending where a chunk ends lets a stream held back here still be sent a keepalive line.
      const boundary = want === list.length ? -1 : list.indexOf(CHUNK_END, want - CHUNK_END.length);
      const end = boundary < 0 ? list.length : boundary + CHUNK_END.length;
      return list.subarray(this.#offset, end);
    }
    return undefined;
  }

  /** The slice `next` returned was written. */
  wrote(slice: Buffer): void {
    this.#offset += slice.length;
  }
}
