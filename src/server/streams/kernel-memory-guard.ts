import type { Logger } from 'pino';
import { PAGE_BYTES, type TcpMemorySource } from './proc-tcp.js';
import type { TcpConnection } from './tcp-connection.js';

/**
 * Share of the kernel's TCP pressure threshold (tcp_mem's middle value) that
 * the host's TCP memory may reach before watch streams stop being handed
 * more of their lists and the stalled ones are closed. Half: the other half
 * is for everything else the host's sockets hold.
 */
export const KERNEL_SHARE = 0.5;
/**
 * The guard acts only when this process's streams could hold this share of
 * the limit (each up to a whole send buffer): a few streams can't be what
 * took the host there, and another process's load must not cut them.
 */
export const OWN_SHARE = 0.1;
/**
 * A stream seen making no progress (no drain, no write, and no byte taken
 * from its send queue between reads of the queues) for this long while the
 * host is past its share may be closed. Holding streams back already
 * stops the growth; closing is for memory a client never takes. A herd of
 * joiners whose clients are busy pauses for seconds at a time (1 s closed 77
 * of 2,000 in the fleet bench's all-at-once join), and a reader's pauses end sooner.
 */
export const STALL_GRACE_MS = 10_000;
/** Figures this old are read again before a stream is admitted (one read of /proc/net/sockstat). */
const FRESH_MS = 5;
/** Least time between two reads of every connection's send queue... */
const MIN_SPACING_MS = 50;
/** ...and at least this many times what the last one took (~10 ms per 1,000 connections, more under load). */
const SPACING_PER_READ = 5;
/** Closes are logged at most this often (with the counts since the last line): an attack must not flood the log too. */
const LOG_INTERVAL_MS = 10_000;

/** What the guard needs of a watcher. */
export interface GuardedStream {
  readonly closed: boolean;
  /** Its connection, to find in `TcpMemorySource.sendQueues`; undefined when its endpoints aren't known. */
  readonly connection: TcpConnection | undefined;
  /** Over its buffer limit: the kernel's send buffer is full. */
  readonly paused: boolean;
  /** At the head: what it is sent now are changes. */
  readonly caughtUp: boolean;
  /** When it last paused and last wrote (performance.now()). */
  readonly pausedAt: number;
  readonly lastWriteAt: number;
  /** Bytes handed to the kernel since the stream opened. */
  readonly handed: number;
  /** Its client took what filled its send buffer at least once (a drain): it reads, and what it is handed replaces what it took. */
  readonly drained: boolean;
  /** Called when there is room again after `admit` refused it. */
  wake(): void;
}

export interface KernelGuardOptions<W extends GuardedStream> {
  source: TcpMemorySource;
  /** A stream with at most this many bytes in its kernel send queue is never closed by the guard. */
  minHeld: number;
  /** The open streams (the set the guard's owner keeps: read, never changed, by the guard). */
  watchers: ReadonlySet<W>;
  /** Closes a stream (with `slow_consumer`, resetting its connection, which frees its kernel buffers). */
  shed: (w: W) => void;
  /** How long a stream must be seen making no progress before it may be closed (default STALL_GRACE_MS). */
  stallGraceMs?: number;
  logger: Logger;
}

/**
 * Keeps watch streams whose clients don't read from pushing the host into
 * TCP memory pressure. Node can't cap a socket's kernel send buffer (no
 * SO_SNDBUF or TCP_NOTSENT_LOWAT for TCP), and for a peer that doesn't read
 * the kernel grows it up to `tcp_wmem`'s maximum (4 MiB): a thousand stalled
 * streams of a 5.3 MB organization held 2 GiB there, past the pressure
 * threshold, however little the process itself queued.
 *
 * Past KERNEL_SHARE of the threshold (host-wide, from /proc/net/sockstat),
 * streams are handed nothing more and wait (`admit`, `wake`), but for those
 * whose client drained a full send buffer (it reads: what they are handed
 * replaces what it took) and those at the head that the last look at the
 * send queues found holding at most `minHeld` (readers). `check` closes stalled streams
 * until the host is back under its share, from every connection's
 * unacknowledged bytes in /proc/net/tcp (read at most every 50 ms): only a
 * stream seen holding more than `minHeld` with its client taking none of it
 * for STALL_GRACE_MS, and neither writing nor pausing meanwhile, is stalled.
 * First those paused (a full send buffer) longest, then the heaviest. A
 * stream the guard holds back writes nothing, and a herd's clients read
 * slowly: neither is closed while its client takes bytes. When none of the memory is the
 * streams' (nothing to close), they all go on. Without the kernel's figures
 * (not Linux), or with streams too few to hold OWN_SHARE of the limit, the
 * guard does nothing.
 */
export class KernelMemoryGuard<W extends GuardedStream> {
  /** In pages; undefined when the kernel's figures are unknown. */
  readonly limitPages: number | undefined;
  private readonly sendBufferMax: number;
  private pages = 0;
  private readAt = Number.NEGATIVE_INFINITY;
  /** Bytes admitted since `pages` was read. */
  private admitted = 0;
  /** Past the share with nothing of the streams' to close: streams are admitted anyway. */
  private notOurs = false;
  private readonly waiting = new Set<W>();
  /** Streams at the head that held at most `minHeld` in their send queues at the last look, since the host went past its share. */
  private cleared = new Set<W>();
  /**
   * Streams that held more than `minHeld` at the last read of the send
   * queues: the bytes then, and since when their queue has not been seen
   * shrinking (their client took nothing; first seen: from then). A stream
   * held back by the guard writes nothing, and a paused one may wait on a
   * client that reads, only slowly: neither says the client stopped. Only
   * being seen not to take anything for a whole grace does. Emptied when
   * the host is back under its share.
   */
  private queueSeen = new Map<W, { bytes: number; progressAt: number }>();
  private nextQueuesRead = 0;
  private readingQueues = false;
  private readonly unlogged = { closed: 0, freedBytes: 0, at: Number.NEGATIVE_INFINITY };

  constructor(private readonly o: KernelGuardOptions<W>) {
    const pressure = o.source.pressurePages();
    this.limitPages = pressure === undefined || o.source.pages() === undefined ? undefined : Math.floor(pressure * KERNEL_SHARE);
    this.sendBufferMax = o.source.sendBufferMax() ?? 4 * 1024 * 1024;
  }

  private refresh(now = performance.now()): number {
    if (now - this.readAt >= FRESH_MS) {
      this.pages = this.o.source.pages() ?? 0;
      this.readAt = now;
      this.admitted = 0;
    }
    return this.pages + Math.ceil(this.admitted / PAGE_BYTES);
  }

  /** Past the limit, with streams enough to matter. */
  private over(now?: number): boolean {
    const limit = this.limitPages;
    if (limit === undefined || this.o.watchers.size * this.sendBufferMax < OWN_SHARE * limit * PAGE_BYTES) return false;
    return this.refresh(now) > limit;
  }

  /**
   * May `bytes` more be handed to the kernel for `w`? When not, `w.wake` is
   * called once there is room. `now` (performance.now()), when the caller
   * has it: a fan-out passes its start, so the kernel's figures are read
   * once for the whole of it and what it admits meanwhile counts in full.
   */
  admit(w: W, bytes: number, now?: number): boolean {
    if (this.limitPages === undefined) return true;
    if (!w.drained && !(w.caughtUp && this.cleared.has(w)) && !this.notOurs && this.over(now)) {
      this.waiting.add(w);
      return false;
    }
    this.admitted += bytes;
    return true;
  }

  /** A closed stream. */
  forget(w: W): void {
    this.waiting.delete(w);
    this.cleared.delete(w);
    this.queueSeen.delete(w);
  }

  /** Since when `w` is known to have held more than `minHeld` with its client taking nothing; +Infinity when not known. */
  private stillSince(w: W): number {
    return this.queueSeen.get(w)?.progressAt ?? Number.POSITIVE_INFINITY;
  }

  private get grace(): number {
    return this.o.stallGraceMs ?? STALL_GRACE_MS;
  }

  get waitingCount(): number {
    return this.waiting.size;
  }

  /** Wakes waiting streams when there is room, else closes stalled ones; resolves with how many it closed. */
  async check(): Promise<number> {
    const limit = this.limitPages;
    if (limit === undefined) return 0;
    this.readAt = Number.NEGATIVE_INFINITY;
    if (!this.over()) {
      this.notOurs = false;
      this.cleared.clear();
      this.queueSeen.clear();
      this.wakeAll();
      return 0;
    }
    if (this.notOurs) this.wakeAll();
    const now = performance.now();
    const excess = (this.refresh(now) - limit) * PAGE_BYTES;
    // A paused stream's send buffer is full: it holds what it was handed, up to the buffer's size.
    const paused = [...this.o.watchers].filter((w) => !w.closed && w.paused && now - Math.max(w.pausedAt, this.stillSince(w)) >= this.grace);
    paused.sort((a, b) => a.pausedAt - b.pausedAt);
    let freed = 0;
    let closed = 0;
    for (const w of paused) {
      if (freed >= excess) break;
      freed += Math.min(w.handed, this.sendBufferMax);
      closed++;
      this.o.shed(w);
    }
    this.log(closed, freed);
    if (freed < excess) this.closeHeaviest(now).catch((err: unknown) => this.o.logger.error({ err }, 'closing the watchers holding the most in the kernel failed'));
    return closed;
  }

  /** Reads every connection's unacknowledged bytes, and closes the streams holding the most. */
  private async closeHeaviest(now: number): Promise<void> {
    if (this.readingQueues || now < this.nextQueuesRead) return;
    this.readingQueues = true;
    let queues: Map<TcpConnection, number>;
    try {
      const connections: TcpConnection[] = [];
      for (const w of this.o.watchers) if (!w.closed && w.connection !== undefined) connections.push(w.connection);
      queues = await this.o.source.sendQueues(connections);
    } finally {
      this.readingQueues = false;
      this.nextQueuesRead = performance.now() + Math.max(MIN_SPACING_MS, SPACING_PER_READ * (performance.now() - now));
    }
    const limit = this.limitPages ?? 0;
    this.readAt = Number.NEGATIVE_INFINITY;
    const excess = (this.refresh() - limit) * PAGE_BYTES;
    if (excess <= 0) return;
    const readAt = performance.now();
    const after = readAt - this.grace;
    const held: [W, number][] = [];
    const cleared = new Set<W>();
    const seen = new Map<W, { bytes: number; progressAt: number }>();
    let ours = 0;
    for (const w of this.o.watchers) {
      const bytes = w.closed || w.connection === undefined ? undefined : queues.get(w.connection);
      if (bytes === undefined) continue;
      if (bytes <= this.o.minHeld) {
        cleared.add(w);
        continue;
      }
      ours++;
      const before = this.queueSeen.get(w);
      seen.set(w, { bytes, progressAt: before === undefined || bytes < before.bytes ? readAt : before.progressAt });
    }
    this.queueSeen = seen;
    for (const [w, { bytes }] of seen) if (Math.max(w.lastWriteAt, w.pausedAt, this.stillSince(w)) <= after) held.push([w, bytes]);
    this.cleared = cleared;
    // Nothing of the streams' to close, now or after the grace: the memory is someone else's.
    if (ours === 0 && !this.notOurs) {
      this.o.logger.warn({ tcpMemPages: this.pages, limitPages: limit, watchers: queues.size }, 'kernel TCP memory past the watch streams\' share, but they hold little of it: lists go on');
    }
    this.notOurs = ours === 0;
    // Readers found to be reading, or everyone when the memory is someone else's.
    this.wakeAll();
    held.sort((a, b) => b[1] - a[1]);
    let freed = 0;
    let closed = 0;
    for (const [w, bytes] of held) {
      if (freed >= excess) break;
      freed += bytes;
      closed++;
      this.o.shed(w);
    }
    this.log(closed, freed);
  }

  private wakeAll(): void {
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const w of waiting) if (!w.closed) w.wake();
  }

  private log(closed: number, freedBytes: number): void {
    const u = this.unlogged;
    u.closed += closed;
    u.freedBytes += freedBytes;
    const now = performance.now();
    if (u.closed === 0 || now - u.at < LOG_INTERVAL_MS) return;
    this.o.logger.warn(
      { tcpMemPages: this.pages, limitPages: this.limitPages, closed: u.closed, freedBytes: u.freedBytes, waiting: this.waiting.size },
      'kernel TCP memory past the watch streams\' share: closed stalled watchers (counts since the last such line)',
    );
    u.at = now;
    u.closed = 0;
    u.freedBytes = 0;
  }
}
