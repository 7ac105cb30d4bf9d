import type { StreamSocket } from './stream-socket.js';
import type { Logger } from 'pino';
import { endConnection, resetConnection } from './socket-reset.js';
import { tcpConnection, type TcpConnection } from './tcp-connection.js';
import type { GuardedOwnedStream } from './stream-owner.js';
import type { StreamEnd, StreamKind } from './owned-stream.js';

export interface LineStreamOptions {
  kind: StreamKind;
  /** The credential whose revocation ends it. */
  tokenId: string | undefined;
  /** Bytes it may have unsent; past it the stream is cut (its client reconnects and gets the current value). */
  bufferLimit: number;
  /** Called once, when the connection closed for whatever reason (the kind forgets it and tells the owner). */
  onClose(s: LineStream): void;
  logger: Logger;
}

/**
 * A stream of whole lines (already encoded chunks) to one client, for kinds
 * that send a current value rather than a history: convergence streams now,
 * any such kind later. It never pauses: a client that stops reading is cut
 * once `bufferLimit` bytes wait for it, and reconnects to the current value.
 * What the kernel guard needs of a stream it can tell from the socket.
 */
export class LineStream implements GuardedOwnedStream {
  readonly kind: StreamKind;
  readonly tokenId: string | undefined;
  readonly connection: TcpConnection | undefined;
  readonly paused = false;
  readonly caughtUp = true;
  readonly pausedAt = Number.NEGATIVE_INFINITY;
  readonly drained = false;
  closed = false;
  lastWriteAt = performance.now();
  #written = 0;
  readonly #socket: StreamSocket;
  readonly #o: LineStreamOptions;

  constructor(socket: StreamSocket, o: LineStreamOptions) {
    this.#socket = socket;
    this.#o = o;
    this.kind = o.kind;
    this.tokenId = o.tokenId;
    this.connection = tcpConnection(socket);
    socket.setNoDelay(true);
    socket.once('close', () => this.#finish());
    // 'close' follows: the error itself is the client's business (a reset, a timeout).
    socket.on('error', (err) => o.logger.debug({ err, kind: o.kind }, 'stream socket error'));
  }

  get held(): number {
    return this.#socket.writableLength;
  }

  get handed(): number {
    return this.#written - this.#socket.writableLength;
  }

  /** Writes a line; cuts a stream whose client left `bufferLimit` bytes unread. */
  write(bytes: Buffer): void {
    if (this.closed) return;
    if (this.#socket.writableLength > this.#o.bufferLimit) {
      this.destroy();
      return;
    }
    this.#socket.write(bytes);
    this.#written += bytes.length;
    this.lastWriteAt = performance.now();
  }

  end(end: StreamEnd): void {
    if (!this.closed) endConnection(this.#socket, end.code, end.message);
  }

  destroy(): void {
    resetConnection(this.#socket);
  }

  /** Never held back by the guard: a line stream writes what it has and is cut at its limit. */
  wake(): void {}

  #finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.#o.onClose(this);
  }
}
