import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { ErrorCode, Watch, WatchKind } from '../../protocol/index.js';
import type { Store } from '../store/index.js';
import type { CachedEvent, EventRing } from './event-ring.js';
import type { FeedListener, OrgFeed } from './org-feed.js';
import { CATCH_UP_PAGE } from './catch-up-reads.js';
import { CHUNK_END, encodeError, encodeTail, KEEPALIVE, LAST_CHUNK } from './encode.js';
import type { WatchMetrics } from './watch-metrics.js';
import { tcpConnection, type TcpConnection } from './tcp-connection.js';
import { resetConnection } from './socket-reset.js';

interface KindState {
  /** Events of this kind with revision ≤ gt are not sent. */
  readonly gt: number;
  /** Deletes with revision ≤ this are not sent: the client can't hold those objects. */
  readonly deletesAfter: number;
  tailPending: boolean;
}

/** What every watcher of one engine shares: made once, so a stream holds a reference, not a copy. */
export interface WatcherShared {
  store: Store;
  metrics: WatchMetrics;
  logger: Logger;
  /** Called once, when the stream first reached the head (all tails sent) or closed before. */
  onListed?(w: Watcher): void;
  /** Called when writing pauses because the socket's buffer is over its limit. */
  onPaused?(): void;
  /** Whether the watcher may hand the kernel more while the host nears TCP memory pressure (KernelMemoryGuard). */
  kernel?: { admit(w: Watcher, bytes: number): boolean };
  onClose(w: Watcher): void;
}

export interface WatcherOptions {
  shared: WatcherShared;
  socket: Socket;
  feed: OrgFeed;
  watches: readonly Watch[];
  /** The organization's head when the stream started. */
  startHead: number;
  /** Token whose revocation ends this stream. */
  tokenId: string | undefined;
  /** Settings as they were when the stream opened. */
  bufferLimit: number;
  slowConsumerTimeoutMs: number;
}

/**
 * Bytes an initial list from the snapshot may have queued in its socket
 * before writing pauses until drain: what a stalled joiner holds is this
 * many bytes of references to shared buffers, whatever its organization's size.
 */
export const LIST_HIGH_WATER = 256 * 1024;

const EMPTY = Buffer.alloc(0);
/** Smallest slice written while listing, so a nearly full socket still makes progress per drain. */
const LIST_MIN_SLICE = 16 * 1024;

/** Where a watcher is in its initial list from the snapshot: the shared buffers (one per kind) and a cursor. */
interface SnapshotList {
  readonly lists: readonly Buffer[];
  list: number;
  offset: number;
}

type Row = Pick<CachedEvent, 'revision' | 'kind' | 'deleted'>;

/**
 * One watch stream. Its only state is its position: the revision up to which
 * it has been sent everything it asked for. It is served from the shared
 * ring when its position is inside it, else from the database page by page;
 * when its socket can't take more it stops and resumes from its position on
 * drain, so a stalled client costs at most its buffer limit.
 */
export class Watcher implements FeedListener {
  position: number;
  readonly tokenId: string | undefined;
  readonly feed: OrgFeed;
  /** All tails were sent: the stream is at the head and bookmarks may flow. */
  caughtUp = false;
  paused = false;
  closed = false;
  lastWriteAt = performance.now();
  /** When it was last sent a keepalive line (performance.now()); never: -Infinity. */
  private lastKeepAliveAt = Number.NEGATIVE_INFINITY;
  /** When it last paused (performance.now()); never: -Infinity. */
  pausedAt = Number.NEGATIVE_INFINITY;
  /** Its client took what filled its send buffer, at least once: it reads. */
  drained = false;
  /** Its connection, as the kernel's send-queue figures list it (see KernelMemoryGuard). */
  readonly connection: TcpConnection | undefined;
  /** The kinds asked for, sorted (watchers asking for the same kinds share catch-up reads), and their states, index by index. */
  private readonly kindList: WatchKind[];
  private readonly kindStates: KindState[];
  private readonly o: WatcherShared;
  private readonly socket: Socket;
  private readonly startHead: number;
  private readonly bufferLimit: number;
  private readonly slowConsumerTimeoutMs: number;
  /**
   * Below this position the watcher must read the database, not the ring:
   * an initial list (gt_revision 0) suppresses deletes up to the start head,
   * which is right for the database (an object deleted then is a tombstone
   * there) but not for the ring, whose earlier events may carry the object's
   * changes before that delete.
   */
  private readonly listUntil: number;
  /** The feed's catch-up mark when the stream opened (see CatchUpReads). */
  private readonly openedMark: number;
  /** Issue number of the last catch-up page used: the next one must be newer. */
  private lastIssued = 0;
  /** The highest revision the client says it has (its largest gt_revision). */
  private readonly maxGt: number;
  /** Whether a fill asked for after the ring fell short of `maxGt` has read the database's head (see `fresh`). */
  private freshness: 'unknown' | 'asked' | 'checked' = 'unknown';
  private reading = false;
  private wakeAgain = false;
  private snapshotList: SnapshotList | undefined;
  /** Bytes passed to the socket by write(). */
  private writtenTotal = 0;
  /** writtenTotal after the last slice of the snapshot's shared lists. */
  private viewsEnd = 0;
  private listedObjects = 0;
  private listed = false;
  private slowTimer: NodeJS.Timeout | undefined;
  /** Refused by the kernel guard: waits for `wake`. */
  private gated = false;

  constructor(w: WatcherOptions) {
    this.o = w.shared;
    this.socket = w.socket;
    this.startHead = w.startHead;
    this.bufferLimit = w.bufferLimit;
    this.slowConsumerTimeoutMs = w.slowConsumerTimeoutMs;
    this.feed = w.feed;
    this.tokenId = w.tokenId;
    this.connection = tcpConnection(w.socket);
    const watches = [...w.watches].sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
    let position = Number.MAX_SAFE_INTEGER;
    let listUntil = 0;
    let maxGt = 0;
    this.kindList = [];
    this.kindStates = [];
    for (const x of watches) {
      const gt = x.gt_revision ?? 0;
      this.kindList.push(x.kind);
      this.kindStates.push({ gt, deletesAfter: gt > 0 ? gt : w.startHead, tailPending: x.at_tail !== true });
      position = Math.min(position, gt);
      maxGt = Math.max(maxGt, gt);
      if (gt === 0) listUntil = w.startHead;
    }
    this.position = position;
    this.maxGt = maxGt;
    this.listUntil = listUntil;
    this.openedMark = w.feed.catchUp.mark();
    // A fresh list at the snapshot's head is written from memory; resumes and mixed requests read as before.
    const snapshot = w.feed.snapshot;
    if (snapshot && w.startHead === w.feed.head && maxGt === 0) {
      this.snapshotList = { lists: this.kindList.map((k) => snapshot.list(k)), list: 0, offset: 0 };
      this.listedObjects = this.kindList.reduce((n, k) => n + snapshot.count(k), 0);
      this.o.metrics.listsFromSnapshot.inc();
    }
    w.socket.on('close', () => this.finish('client_closed'));
    w.socket.on('error', (err) => {
      this.o.logger.debug({ err, org: this.feed.orgId }, 'watch socket error');
      this.finish('socket_error');
    });
  }

  onFeed(): void {
    this.pump();
  }

  /** Sends what the watcher is missing; synchronous while it is inside the ring. */
  pump(): void {
    if (this.closed || this.paused || this.gated) return;
    if (this.snapshotList && !this.writeSnapshotList(this.snapshotList)) return;
    if (this.reading) {
      this.wakeAgain = true;
      return;
    }
    if (!this.caughtUp && !this.admitted(0)) return;
    const ring = this.feed.ring;
    if (ring && this.inRing(ring)) {
      this.drainRing(ring);
      return;
    }
    this.reading = true;
    this.catchUp()
      .catch((err: unknown) => {
        this.o.logger.warn({ err, org: this.feed.orgId }, 'watch catch-up read failed; closing the stream');
        this.close('unavailable', 'the server could not read changes; resume from your last revision');
      })
      .finally(() => {
        this.reading = false;
        if (this.wakeAgain) {
          this.wakeAgain = false;
          this.pump();
        }
      });
  }

  /** Writes the list from the snapshot's shared buffers; false when it paused (the rest goes on drain). */
  private writeSnapshotList(l: SnapshotList): boolean {
    const limit = Math.min(this.bufferLimit, LIST_HIGH_WATER);
    for (; l.list < l.lists.length; l.list++, l.offset = 0) {
      const list = l.lists[l.list] ?? EMPTY;
      while (l.offset < list.length) {
        // Slices share the snapshot's memory: what waits in the socket is a view, not a copy.
        const want = Math.min(list.length, l.offset + Math.max(LIST_MIN_SLICE, limit - this.socket.writableLength));
        // Slices end where a chunk ends, so a stream held back here can still be sent a keepalive line.
        const boundary = want === list.length ? -1 : list.indexOf(CHUNK_END, want - CHUNK_END.length);
        const end = boundary < 0 ? list.length : boundary + CHUNK_END.length;
        if (!this.admitted(end - l.offset)) return false;
        this.write(list.subarray(l.offset, end), false);
        this.viewsEnd = this.writtenTotal;
        l.offset = end;
        if (this.socket.writableLength > limit) {
          this.pause();
          return false;
        }
      }
    }
    this.snapshotList = undefined;
    this.o.metrics.written.events += this.listedObjects;
    // Everything that existed at the start head was sent: the ring (or the database) serves the rest.
    this.position = Math.max(this.position, this.startHead);
    return true;
  }

  private inRing(ring: EventRing): boolean {
    return ring.covers(this.position) && this.position >= this.listUntil;
  }

  private wanted(e: Row): boolean {
    const k = this.kindStates[this.kindList.indexOf(e.kind)];
    if (!k || e.revision <= k.gt) return false;
    return !(e.deleted && e.revision <= k.deletesAfter);
  }

  private drainRing(ring: EventRing): void {
    const from = ring.indexAfter(this.position);
    // Several events (a resume, a burst): one writev instead of a syscall per event.
    const batch = ring.size - from > 1;
    if (batch) this.socket.cork();
    try {
      for (let i = from; i < ring.size; i++) {
        const e = ring.at(i);
        if (this.wanted(e)) {
          if (!this.admitted(e.bytes.length)) return;
          this.write(e.bytes, true);
        }
        this.position = e.revision;
        // Nothing follows an organization's own delete.
        if (e.kind === 'organization' && e.deleted) return this.close(undefined, '');
        if (this.overLimit()) return this.pause();
      }
      if (ring.head > this.position) this.position = ring.head;
      if (!this.caughtUp && this.position < this.maxGt && !this.fresh()) return;
      this.reachedHead();
    } finally {
      if (batch) this.socket.uncork();
    }
  }

  /**
   * Whether the tails may go out while the ring's head is below what the
   * client already saw elsewhere (its largest gt_revision): only once a fill
   * asked for since has read the database's head. A replica that missed
   * signals (a bus outage) would otherwise send a kind's tail above changes
   * of other kinds it has not sent yet, which then came after the tails, out
   * of order. The Kubernetes watch cache waits to be fresh the same way
   * before serving a resource version it has not seen. A gt_revision above
   * the database's head gets its tail once that fill is done, as before.
   */
  private fresh(): boolean {
    if (this.freshness === 'checked') return true;
    if (this.freshness === 'unknown') {
      this.freshness = 'asked';
      this.feed
        .fill()
        .catch((err: unknown) => this.o.logger.warn({ err, org: this.feed.orgId }, 'tail cache fill for a resume ahead of it failed; its tails go out'))
        .finally(() => {
          this.freshness = 'checked';
          this.pump();
        });
    }
    return false;
  }

  private async catchUp(): Promise<void> {
    for (;;) {
      if (this.closed || this.paused || !this.admitted(0)) return;
      const ring = this.feed.ring;
      if (ring && this.inRing(ring)) return this.drainRing(ring);
      const page = await this.feed.catchUp.read(this.position, this.kindList, {
        openedMark: this.openedMark,
        lastIssued: this.lastIssued,
        listing: this.position < this.listUntil,
        knownRevision: this.maxGt,
      });
      if (this.closed) return;
      this.lastIssued = page.issued;
      const batch = page.batch;
      if (!batch.exists) return this.close(undefined, '');
      for (const k of this.kindStates) {
        if (batch.compacted > Math.max(this.position, k.deletesAfter)) {
          return this.close(
            'revision_compacted',
            `deletes after revision ${Math.max(this.position, k.deletesAfter)} were compacted (compacted revision ${batch.compacted}); list again from 0`,
          );
        }
      }
      this.socket.cork();
      try {
        for (const [i, row] of batch.rows.entries()) {
          if (this.wanted(row)) this.write(page.bytes(i), true);
          this.position = row.revision;
          if (this.overLimit()) return this.pause();
        }
      } finally {
        this.socket.uncork();
      }
      if (batch.deleted && batch.rows.length < CATCH_UP_PAGE) {
        // The organization's own delete event was just sent: nothing can follow it.
        return this.close(undefined, '');
      }
      if (batch.rows.length < CATCH_UP_PAGE) {
        this.position = Math.max(this.position, batch.head);
        this.reachedHead();
        // The ring may have moved past us while we read; loop until it covers us.
        if (!ring || this.inRing(ring) || ring.head <= this.position) {
          if (ring && this.inRing(ring)) this.drainRing(ring);
          return;
        }
      }
    }
  }

  private reachedHead(): void {
    if (this.caughtUp) return;
    for (let i = 0; i < this.kindStates.length; i++) {
      const k = this.kindStates[i];
      const kind = this.kindList[i];
      if (!k?.tailPending || kind === undefined) continue;
      k.tailPending = false;
      this.write(encodeTail(kind, Math.max(this.position, k.gt)), false);
    }
    this.caughtUp = true;
    this.markListed();
  }

  private markListed(): void {
    if (this.listed) return;
    this.listed = true;
    this.o.onListed?.(this);
  }

  write(bytes: Buffer, isEvent: boolean): void {
    this.socket.write(bytes);
    this.writtenTotal += bytes.length;
    this.lastWriteAt = performance.now();
    const written = this.o.metrics.written;
    written.bytes += bytes.length;
    if (isEvent) written.events++;
  }

  /**
   * A bookmark at its position to a stream past its tails (before them it
   * would claim a consistency the stream doesn't have yet) that has had
   * nothing for `idleMs` and whose socket takes what it is given: the
   * periodic ones on idle streams, and the last one before a shutdown
   * (`idleMs` 0), so its client resumes every kind from here.
   */
  bookmark(now: number, idleMs: number): void {
    if (!this.caughtUp || this.paused || this.closed || now - this.lastWriteAt < idleMs) return;
    this.write(this.feed.bookmarkBytes(this.position), false);
  }

  /**
   * An empty line to a stream that is still listing or catching up and has
   * had nothing for `idleMs`: its client's silence limit must not cut a
   * stream the server holds back (a herd's lists waiting on the kernel
   * guard). Not counted as a write: the guard judges progress by what the
   * stream is really handed, and the keepalive goes only to a socket with
   * nothing queued, so it adds no memory where the host has none.
   */
  keepAlive(now: number, idleMs: number): void {
    if (this.caughtUp || this.paused || this.closed || this.socket.writableLength > 0) return;
    if (now - Math.max(this.lastWriteAt, this.lastKeepAliveAt) < idleMs) return;
    this.lastKeepAliveAt = now;
    this.socket.write(KEEPALIVE);
  }

  /** Bytes written but not yet taken by the kernel. */
  get buffered(): number {
    return this.socket.writableLength;
  }

  /**
   * Bytes queued that this watcher alone holds: what is queued minus the
   * views of the snapshot's shared lists still in it (the queue is FIFO, so
   * those are the oldest bytes). A stalled joiner's views cost no memory of
   * their own, so they don't count against `--watch-queue-limit`.
   */
  get held(): number {
    const queued = this.socket.writableLength;
    return queued - Math.min(queued, Math.max(0, this.viewsEnd - this.handed));
  }

  /** Bytes handed to the kernel so far. */
  get handed(): number {
    return this.writtenTotal - this.socket.writableLength;
  }

  /** Whether the kernel guard lets `bytes` more go; when not, the watcher waits for `wake`. */
  private admitted(bytes: number): boolean {
    if (this.o.kernel?.admit(this, bytes) ?? true) return true;
    this.gated = true;
    return false;
  }

  /** The kernel guard has room again. */
  wake(): void {
    if (!this.gated) return;
    this.gated = false;
    this.pump();
  }

  private overLimit(): boolean {
    return this.socket.writableLength > this.bufferLimit;
  }

  private pause(): void {
    this.paused = true;
    this.pausedAt = performance.now();
    this.o.onPaused?.();
    this.socket.once('drain', () => this.resume());
    this.slowTimer = setTimeout(() => this.close('slow_consumer', 'the watcher could not keep up; resume from your last revision'), this.slowConsumerTimeoutMs);
    this.slowTimer.unref();
  }

  private resume(): void {
    if (this.closed) return;
    clearTimeout(this.slowTimer);
    this.slowTimer = undefined;
    this.paused = false;
    this.drained = true;
    this.pump();
  }

  /** Ends the stream, with an `error` event first when `code` is given. */
  close(code: ErrorCode | undefined, message: string): void {
    if (this.closed) return;
    const socket = this.socket;
    if (code === 'slow_consumer') {
      this.o.metrics.slowConsumerCloses.inc();
      // Reset, without the error line: it would wait behind what the kernel holds (up to 4 MiB) for a client
      // that doesn't take it, and so would the kernel's memory, for minutes (see resetConnection).
      resetConnection(socket);
    } else {
      if (code !== undefined) socket.write(encodeError(code, message));
      socket.end(LAST_CHUNK);
      // A client that doesn't read would keep the socket (and its buffer) forever.
      setTimeout(() => resetConnection(socket), 5000).unref();
    }
    this.finish(code ?? 'ended');
  }

  private finish(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.slowTimer);
    this.snapshotList = undefined;
    this.markListed();
    this.o.metrics.streamsEnded.inc({ reason });
    this.o.onClose(this);
  }
}
