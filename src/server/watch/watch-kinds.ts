import type { Watch, WatchKind } from '../../protocol/index.js';
import type { CachedEvent } from './event-ring.js';
import { encodeTail } from './encode.js';

interface KindState {
  /** Events of this kind with revision ≤ gt are not sent. */
  readonly gt: number;
  /** Deletes with revision ≤ this are not sent: the client can't hold those objects. */
  readonly deletesAfter: number;
  /** The client applies `patch` events of this kind. */
  readonly patches: boolean;
  /** The client unpacks `gzip` events of this kind. */
  readonly gzip: boolean;
  tailPending: boolean;
}

/** What a stream needs of an event to decide whether it is sent. */
export type Row = Pick<CachedEvent, 'revision' | 'kind' | 'deleted'>;

/**
 * The kinds one watch stream asked for, each from its own gt_revision:
 * which events it is sent, and the tails it is owed.
 */
export class WatchKinds {
  /** The kinds, sorted: streams asking for the same kinds share catch-up reads. */
  readonly list: readonly WatchKind[];
  /** Their states, index by index. */
  readonly #states: KindState[];
  /** The lowest gt_revision: where the stream starts. */
  readonly from: number;
  /** The highest gt_revision: the revision the client already has. */
  readonly known: number;
  /**
   * Below this position the stream must read the database, not the ring:
   * an initial list (gt_revision 0) suppresses deletes up to the start head,
   * which is right for the database (an object deleted then is a tombstone
   * there) but not for the ring, whose earlier events may carry the object's
   * changes before that delete.
   */
  readonly listUntil: number;

  constructor(watches: readonly Watch[], startHead: number) {
    const sorted = [...watches].sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
    const list: WatchKind[] = [];
    this.#states = [];
    let from = Number.MAX_SAFE_INTEGER;
    let known = 0;
    let listUntil = 0;
    for (const w of sorted) {
      const gt = w.gt_revision ?? 0;
      list.push(w.kind);
      this.#states.push({ gt, deletesAfter: gt > 0 ? gt : startHead, patches: w.patches === true, gzip: w.gzip === true, tailPending: w.at_tail !== true });
      from = Math.min(from, gt);
      known = Math.max(known, gt);
      if (gt === 0) listUntil = startHead;
    }
    this.list = list;
    this.from = from;
    this.known = known;
    this.listUntil = listUntil;
  }

  /** Whether the stream is sent `e`. */
  wanted(e: Row): boolean {
    return this.#sent(e) !== undefined;
  }

  /**
   * What the stream is sent for a change from the tail cache: nothing (not
   * wanted), its patch (the kind takes patches, the feed made one, and the
   * event is past `wholeThrough`, see Watcher), else the whole object;
   * either one packed as a `gzip` event when the kind takes gzip and the
   * feed packed it. One lookup per event and watcher: this is the fan-out's
   * inner loop.
   */
  outgoing(e: CachedEvent, wholeThrough: number): Buffer | undefined {
    const k = this.#sent(e);
    if (k === undefined) return undefined;
    if (k.patches && e.patch !== undefined && e.revision > wholeThrough) return (k.gzip ? e.gzipPatch : undefined) ?? e.patch;
    return (k.gzip ? e.gzip : undefined) ?? e.bytes;
  }

  #sent(e: Row): KindState | undefined {
    const k = this.#states[this.list.indexOf(e.kind)];
    if (!k || e.revision <= k.gt) return undefined;
    return e.deleted && e.revision <= k.deletesAfter ? undefined : k;
  }

  /**
   * Why a stream at `position` can't go on reading a database compacted at
   * `compacted` (a delete it is owed may be gone); undefined when it can.
   */
  compactedPast(compacted: number, position: number): string | undefined {
    for (const k of this.#states) {
      const after = Math.max(position, k.deletesAfter);
      if (compacted > after) return `deletes after revision ${after} were compacted (compacted revision ${compacted}); list again from 0`;
    }
    return undefined;
  }

  /** The tail lines still owed at `position`, once: each kind's is then sent. */
  takeTails(position: number): Buffer[] {
    const tails: Buffer[] = [];
    for (const [i, k] of this.#states.entries()) {
      const kind = this.list[i];
      if (!k.tailPending || kind === undefined) continue;
      k.tailPending = false;
      tails.push(encodeTail(kind, Math.max(position, k.gt)));
    }
    return tails;
  }
}
