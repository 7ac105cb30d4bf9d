import type { Logger } from 'pino';
import type { ErrorCode, Watch } from '../../protocol/index.js';
import type { Store } from '../store/index.js';
import type { EventRing } from './event-ring.js';
import type { FeedListener, OrgFeed } from './org-feed.js';
import { CATCH_UP_PAGE } from './catch-up-reads.js';
import type { WatchMetrics } from './watch-metrics.js';
import { LIST_HIGH_WATER, SnapshotList } from './snapshot-list.js';
import { WatchKinds } from './watch-kinds.js';
import { transition, type Flow, type Phase, type Read } from './watcher-state.js';
import { WatchSocket } from './watch-socket.js';
import { tcpConnection, type GuardedOwnedStream, type StreamEnd, type StreamSocket, type TcpConnection } from '../streams/index.js';

export { LIST_HIGH_WATER };

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
  kernel?: { admit(w: Watcher, bytes: number, now?: number): boolean };
  onClose(w: Watcher): void;
}

export interface WatcherOptions {
  shared: WatcherShared;
  socket: StreamSocket;
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
 * One watch stream. Its progress is its position: the revision up to which
 * it has been sent everything it asked for. It is served from the shared
 * ring when its position is inside it, else from the database page by page;
 * when its socket can't take more it stops and resumes from its position on
 * drain, so a stalled client costs at most its buffer limit. Its phase, flow
 * and read change only through `transition` (watcher-state.ts, with the diagram).
 */
export class Watcher implements FeedListener, GuardedOwnedStream {
  position: number;
  readonly tokenId: string | undefined;
  readonly feed: OrgFeed;
  #phase: Phase;
  #flow: Flow = 'open';
  #read: Read = 'idle';
  /** When it last paused (performance.now()); never: -Infinity. */
  pausedAt = Number.NEGATIVE_INFINITY;
  /** Its client took what filled its send buffer, at least once: it reads. A fact the kernel guard reads, not flow: it never goes back. */
  drained = false;
  /** Its connection, as the kernel's send-queue figures list it (see KernelMemoryGuard). */
  readonly connection: TcpConnection | undefined;
  private readonly kinds: WatchKinds;
  private readonly o: WatcherShared;
  private readonly out: WatchSocket;
  private readonly bufferLimit: number;
  private readonly slowConsumerTimeoutMs: number;
  /** The feed's catch-up mark when the stream opened (see CatchUpReads). */
  private readonly openedMark: number;
  /** Issue number of the last catch-up page used: the next one must be newer. */
  private lastIssued = 0;
  /**
   * Changes up to this revision go out whole, never as patches: the client
   * may lack their base. A list or a database read sends each object at its
   * latest revision as of the read, not the versions in between, and what
   * superseded a skipped version is at most the read's head. So this is the
   * highest head of the database reads the stream was sent and, when the
   * stream resumes (the client's state came from earlier streams' reads,
   * perhaps cut inside one), its start head. Past it the tail cache is
   * contiguous from the client's state: it was sent every patch's base.
   */
  private wholeThrough: number;
  /** Set while `listing`. */
  private snapshotList: SnapshotList | undefined;
  private slowTimer: NodeJS.Timeout | undefined;

  constructor(w: WatcherOptions) {
    this.o = w.shared;
    this.out = new WatchSocket(w.socket, w.shared.metrics);
    this.bufferLimit = w.bufferLimit;
    this.slowConsumerTimeoutMs = w.slowConsumerTimeoutMs;
    this.feed = w.feed;
    this.tokenId = w.tokenId;
    this.connection = tcpConnection(w.socket);
    this.kinds = new WatchKinds(w.watches, w.startHead);
    this.position = this.kinds.from;
    this.wholeThrough = this.kinds.known > 0 ? w.startHead : 0;
    this.openedMark = w.feed.catchUp.mark();
    // A fresh list at the snapshot's head is written from memory; resumes and mixed requests read as before.
    const snapshot = w.feed.snapshot;
    if (snapshot && w.startHead === w.feed.head && this.kinds.known === 0) {
      this.snapshotList = new SnapshotList(snapshot, this.kinds.list, w.startHead);
      this.o.metrics.listsFromSnapshot.inc();
      this.#phase = 'listing';
    } else {
      this.#phase = 'catching-up';
    }
    w.socket.on('close', () => this.finish('client_closed'));
    w.socket.on('error', (err) => {
      this.o.logger.debug({ err, org: this.feed.orgId }, 'watch socket error');
      this.finish('socket_error');
    });
  }

  get phase(): Phase {
    return this.#phase;
  }

  get flow(): Flow {
    return this.#flow;
  }

  get closed(): boolean {
    return this.#phase === 'closed';
  }

  /** All tails were sent: the stream is at the head and bookmarks may flow. */
  get caughtUp(): boolean {
    return this.#phase === 'live';
  }

  get paused(): boolean {
    return this.#flow === 'paused';
  }

  #enter(next: Phase): void {
    const from = this.#phase;
    this.#phase = transition(from, next);
    // The list is over when the stream is live or gone, whichever comes first: `onListed` fires once.
    if (next === 'live' || (next === 'closed' && from !== 'live')) this.o.onListed?.(this);
  }

  #setFlow(next: Flow): void {
    this.#flow = transition(this.#flow, next);
  }

  #setRead(next: Read): void {
    this.#read = transition(this.#read, next);
  }

  onFeed(now: number): void {
    this.out.stamp = now;
    try {
      this.pump();
    } finally {
      this.out.stamp = undefined;
    }
  }

  /** Sends what the watcher is missing; synchronous while it is inside the ring. */
  pump(): void {
    if (this.#flow !== 'open' || this.#phase === 'closed') return;
    if (this.snapshotList && !this.writeSnapshotList(this.snapshotList)) return;
    if (this.#read !== 'idle') {
      if (this.#read === 'reading') this.#setRead('reading-again');
      return;
    }
    if (this.#phase !== 'live' && !this.admitted(0)) return;
    const ring = this.feed.ring;
    if (ring && this.inRing(ring)) return this.fromRing(ring);
    if (this.#phase !== 'live' && this.#phase !== 'catching-up') this.#enter('catching-up');
    this.#setRead('reading');
    this.catchUp()
      .catch((err: unknown) => {
        this.o.logger.warn({ err, org: this.feed.orgId }, 'watch catch-up read failed; closing the stream');
        this.close('unavailable', 'the server could not read changes; resume from your last revision');
      })
      .finally(() => {
        const again = this.#read === 'reading-again';
        this.#setRead('idle');
        if (again) this.pump();
      });
  }

  /** Writes the list from the snapshot's shared buffers; false when it paused (the rest goes on drain). */
  private writeSnapshotList(l: SnapshotList): boolean {
    const limit = Math.min(this.bufferLimit, LIST_HIGH_WATER);
    for (let slice = l.next(this.out.socket.writableLength, limit); slice; slice = l.next(this.out.socket.writableLength, limit)) {
      if (!this.admitted(slice.length)) return false;
      // Slices share the snapshot's memory: what waits in the socket is a view, not a copy.
      this.out.writeView(slice);
      l.wrote(slice);
      if (this.out.socket.writableLength > limit) {
        this.pause();
        return false;
      }
    }
    this.snapshotList = undefined;
    this.o.metrics.written.events += l.objects;
    // Everything that existed at the start head was sent: the ring (or the database) serves the rest.
    this.position = Math.max(this.position, l.head);
    return true;
  }

  private inRing(ring: EventRing): boolean {
    return ring.covers(this.position) && this.position >= this.kinds.listUntil;
  }

  private fromRing(ring: EventRing): void {
    if (this.#phase === 'listing' || this.#phase === 'catching-up') this.#enter('in-ring');
    this.drainRing(ring);
  }

  private drainRing(ring: EventRing): void {
    const from = ring.indexAfter(this.position);
    // Several events (a resume, a burst): one writev instead of a syscall per event.
    const batch = ring.size - from > 1;
    if (batch) this.out.socket.cork();
    try {
      for (let i = from; i < ring.size; i++) {
        const e = ring.at(i);
        const bytes = this.kinds.outgoing(e, this.wholeThrough);
        if (bytes !== undefined) {
          if (!this.admitted(bytes.length)) return;
          this.out.write(bytes, true);
          if (bytes !== e.bytes) this.o.metrics.countVariant(e, bytes);
        }
        this.position = e.revision;
        // Nothing follows an organization's own delete.
        if (e.kind === 'organization' && e.deleted) return this.close(undefined, '');
        if (this.overLimit()) return this.pause();
      }
      if (ring.head > this.position) this.position = ring.head;
      if (this.#phase !== 'live' && this.position < this.kinds.known && !this.fresh()) return;
      this.reachedHead();
    } finally {
      if (batch) this.out.socket.uncork();
    }
  }

  /** Whether the tails may go out at a ring's head below what the client has: see `confirming` (watcher-state.ts). */
  private fresh(): boolean {
    if (this.#phase === 'confirmed') return true;
    if (this.#phase === 'in-ring') {
      this.#enter('confirming');
      this.feed
        .fill()
        .catch((err: unknown) => this.o.logger.warn({ err, org: this.feed.orgId }, 'tail cache fill for a resume ahead of it failed; its tails go out'))
        .finally(() => {
          // Left the ring meanwhile: the database pages it reads are fresh enough themselves.
          if (this.#phase === 'confirming') this.#enter('confirmed');
          this.pump();
        });
    }
    return false;
  }

  private async catchUp(): Promise<void> {
    for (;;) {
      if (this.closed || this.#flow !== 'open' || !this.admitted(0)) return;
      const ring = this.feed.ring;
      if (ring && this.inRing(ring)) return this.fromRing(ring);
      const page = await this.feed.catchUp.read(this.position, this.kinds.list, {
        openedMark: this.openedMark,
        lastIssued: this.lastIssued,
        listing: this.position < this.kinds.listUntil,
        knownRevision: this.kinds.known,
      });
      if (this.closed) return;
      this.lastIssued = page.issued;
      const batch = page.batch;
      this.wholeThrough = Math.max(this.wholeThrough, batch.head);
      if (!batch.exists) return this.close(undefined, '');
      const compacted = this.kinds.compactedPast(batch.compacted, this.position);
      if (compacted !== undefined) return this.close('revision_compacted', compacted);
      this.out.socket.cork();
      try {
        for (const [i, row] of batch.rows.entries()) {
          if (this.kinds.wanted(row)) this.out.write(page.bytes(i), true);
          this.position = row.revision;
          if (this.overLimit()) return this.pause();
        }
      } finally {
        this.out.socket.uncork();
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
    if (this.#phase === 'live' || this.#phase === 'closed') return;
    for (const tail of this.kinds.takeTails(this.position)) this.out.write(tail, false);
    this.#enter('live');
  }

  get lastWriteAt(): number {
    return this.out.lastWriteAt;
  }

  /**
   * A bookmark at its position to a stream past its tails (before them it
   * would claim a consistency the stream doesn't have yet) that has had
   * nothing for `idleMs` and whose socket takes what it is given: the
   * periodic ones on idle streams, and the last one before a shutdown
   * (`idleMs` 0), so its client resumes every kind from here.
   */
  bookmark(now: number, idleMs: number): void {
    if (this.#phase !== 'live' || this.#flow === 'paused' || now - this.lastWriteAt < idleMs) return;
    this.out.write(this.feed.bookmarkBytes(this.position), false);
  }

  /**
   * An empty line to a stream that is still listing or catching up and has
   * had nothing for `idleMs`: its client's silence limit must not cut a
   * stream the server holds back (a herd's lists waiting on the kernel guard).
   */
  keepAlive(now: number, idleMs: number): void {
    if (this.#phase !== 'live' && this.#phase !== 'closed' && this.#flow !== 'paused') this.out.keepAlive(now, idleMs);
  }

  /** Bytes written but not yet taken by the kernel. */
  get buffered(): number {
    return this.out.buffered;
  }

  /** Bytes queued that this watcher alone holds (see WatchSocket.held). */
  get held(): number {
    return this.out.held;
  }

  /** Bytes handed to the kernel so far. */
  get handed(): number {
    return this.out.handed;
  }

  /** Whether the kernel guard lets `bytes` more go; when not, the watcher waits for `wake`. */
  private admitted(bytes: number): boolean {
    if (this.o.kernel?.admit(this, bytes, this.out.stamp) ?? true) return true;
    this.#setFlow('gated');
    return false;
  }

  /** The kernel guard has room again. */
  wake(): void {
    if (this.#flow !== 'gated') return;
    this.#setFlow('open');
    this.pump();
  }

  private overLimit(): boolean {
    return this.out.socket.writableLength > this.bufferLimit;
  }

  private pause(): void {
    this.#setFlow('paused');
    this.pausedAt = performance.now();
    this.o.onPaused?.();
    this.out.socket.once('drain', () => this.resume());
    this.slowTimer = setTimeout(() => this.close('slow_consumer', 'the watcher could not keep up; resume from your last revision'), this.slowConsumerTimeoutMs);
    this.slowTimer.unref();
  }

  private resume(): void {
    if (this.closed) return;
    clearTimeout(this.slowTimer);
    this.slowTimer = undefined;
    this.#setFlow('open');
    this.drained = true;
    this.pump();
  }

  /** On the prototype, not in each of 10,000 watchers. */
  get kind(): 'watch' {
    return 'watch';
  }

  /** The stream owner's end: a shutdown first gives a stream at its head a bookmark, so its client resumes every kind from there. */
  end(end: StreamEnd): void {
    // A kind moves only with its own events and the bookmarks, and a restarted server's ring starts at its head:
    // without this, a fleet resuming after a restart would read the database, one request per agent.
    if (end.cause === 'shutdown') this.bookmark(performance.now(), 0);
    this.close(end.code, end.message);
  }

  destroy(): void {
    this.out.reset();
  }

  /** Ends the stream, with an `error` event first when `code` is given. */
  close(code: ErrorCode | undefined, message: string): void {
    if (this.closed) return;
    this.out.end(code, message);
    this.finish(code ?? 'ended');
  }

  private finish(reason: string): void {
    if (this.closed) return;
    this.#enter('closed');
    clearTimeout(this.slowTimer);
    this.snapshotList = undefined;
    this.o.metrics.streamsEnded.inc({ reason });
    this.o.onClose(this);
  }
}
