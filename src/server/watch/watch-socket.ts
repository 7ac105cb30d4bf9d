import type { ErrorCode } from '../../protocol/index.js';
import { endConnection, KEEPALIVE, resetConnection, type StreamSocket } from '../streams/index.js';
import type { WatchMetrics } from './watch-metrics.js';

/**
 * The connection of one watch stream and what was written to it: every
 * write is counted (the metrics, the kernel guard's view of progress), and
 * the views of the snapshot's shared lists are told apart from the bytes the
 * stream holds alone.
 */
export class WatchSocket {
  /** When it was last written to (performance.now()); keepalive lines don't count. */
  lastWriteAt = performance.now();
  /**
   * While set, the time writes are stamped with instead of reading the
   * clock: a fan-out's start, which its writes follow by milliseconds,
   * against the seconds the bookmarks and the kernel guard judge idleness in.
   */
  stamp: number | undefined;
  /** When it was last sent a keepalive line; never: -Infinity. */
  #keepAliveAt = Number.NEGATIVE_INFINITY;
  /** Bytes passed to the socket by write(). */
  #written = 0;
  /** #written after the last view of the snapshot's shared lists. */
  #viewsEnd = 0;

  constructor(
    readonly socket: StreamSocket,
    private readonly metrics: WatchMetrics,
  ) {}

  /** Writes `bytes`, counted as an event when `isEvent`. */
  write(bytes: Buffer, isEvent: boolean): void {
    this.socket.write(bytes);
    this.#written += bytes.length;
    this.lastWriteAt = this.stamp ?? performance.now();
    const written = this.metrics.written;
    written.bytes += bytes.length;
    if (isEvent) written.events++;
  }

  /** Writes a view of the snapshot's shared lists: bytes that `held` doesn't count. */
  writeView(view: Buffer): void {
    this.write(view, false);
    this.#viewsEnd = this.#written;
  }

  /**
   * An empty line, when nothing is queued and nothing was written nor sent
   * as keepalive for `idleMs`. Not counted as a write: the kernel guard
   * judges progress by what the stream is really handed, and with nothing
   * queued the line adds no memory where the host has none.
   */
  keepAlive(now: number, idleMs: number): void {
    if (this.socket.writableLength > 0 || now - Math.max(this.lastWriteAt, this.#keepAliveAt) < idleMs) return;
    this.#keepAliveAt = now;
    this.socket.write(KEEPALIVE);
  }

  /** Bytes written but not yet taken by the kernel. */
  get buffered(): number {
    return this.socket.writableLength;
  }

  /**
   * Bytes queued that this stream alone holds: what is queued minus the
   * views of the snapshot's shared lists still in it (the queue is FIFO, so
   * those are the oldest bytes). A stalled joiner's views cost no memory of
   * their own, so they don't count against `--watch-queue-limit`.
   */
  get held(): number {
    const queued = this.socket.writableLength;
    return queued - Math.min(queued, Math.max(0, this.#viewsEnd - this.handed));
  }

  /** Bytes handed to the kernel so far. */
  get handed(): number {
    return this.#written - this.socket.writableLength;
  }

  /** Ends the connection (see `endConnection`), counting a `slow_consumer` end. */
  end(code: ErrorCode | undefined, message: string): void {
    if (code === 'slow_consumer') this.metrics.slowConsumerCloses.inc();
    endConnection(this.socket, code, message);
  }

  /** Cuts the connection at once. */
  reset(): void {
    resetConnection(this.socket);
  }
}
