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
  /**
   * Events up to this revision go out whole. A resumed kind (gt > 0) holds
   * what earlier streams sent it, and a list or a database read there sent
   * each object at its latest revision as of that read, not the versions
   * in between (a stream cut inside a list or a catch-up leaves a client
   * with such gaps below its gt): a patch on one of those could name a base
   * it never got. What superseded such a version is at most that read's
   * head, so at most this stream's start head.
   */
  readonly wholeThrough: number;
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
      this.#states.push({ gt, deletesAfter: gt > 0 ? gt : startHead, patches: w.patches === true, wholeThrough: gt > 0 ? startHead : 0, tailPending: w.at_tail !== true });
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
    const k = this.#states[this.list.indexOf(e.kind)];
    if (!k || e.revision <= k.gt) return false;
    return !(e.deleted && e.revision <= k.deletesAfter);
  }

  /**
   * The bytes a wanted event goes out as for a stream at `position`: its
   * patch when the kind takes patches and the client holds the object at
   * the patch's base, else the whole object. The client holds it when the
   * stream (or the state it resumed from) reached that revision, and no
   * database read of the stream could have skipped it: a read returns each
   * object at its latest revision, so a version superseded before the read
   * never reached the client. What superseded it is at most the read's head
   * (`wholeThrough`, the highest over the stream's reads), so only events
   * after that are safe as patches.
   */
  bytesOf(e: Pick<CachedEvent, 'kind' | 'revision' | 'bytes' | 'patch'>, position: number, wholeThrough: number): Buffer {
    const p = e.patch;
    if (p === undefined || e.revision <= wholeThrough) return e.bytes;
    const k = this.#states[this.list.indexOf(e.kind)];
    if (k?.patches !== true || e.revision <= k.wholeThrough) return e.bytes;
    return Math.max(position, k.gt) >= p.from ? p.bytes : e.bytes;
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
