import type { StreamSocket } from './stream-socket.js';
import type { ErrorCode } from '../../protocol/index.js';
import { encodeError, LAST_CHUNK } from './chunks.js';

/** How long a client has to take a stream's last line before its connection is reset. */
export const LAST_LINE_GRACE_MS = 5_000;

/**
 * Closes a connection with a TCP reset, which frees at once what the kernel
 * holds for it. Closed normally, a connection whose client doesn't read
 * keeps what its send buffer holds (up to tcp_wmem's maximum, 4 MiB) as an
 * orphan, for minutes, still trying to deliver it.
 *
 * Not while the socket's shutdown may be under way (ended, everything
 * handed to the kernel, not finished): libuv refuses a reset then, and node
 * would leave the descriptor open. Such a socket, and a TLS socket (no TCP
 * handle of its own), is just destroyed.
 */
export function resetConnection(socket: StreamSocket): void {
  if (socket.destroyed) return;
  if (socket.writableEnded && !socket.writableFinished && socket.writableLength === 0) {
    socket.destroy();
    return;
  }
  try {
    socket.resetAndDestroy();
  } catch (err) {
    // A socket without a TCP handle of its own (TLS) can't be reset: destroying it is all there is.
    if (!(err instanceof Error)) throw err;
    socket.destroy();
  }
}

/**
 * Ends a stream's connection: its `error` line (when `code` is given) and
 * the last chunk, then a reset if the client hasn't taken them within
 * LAST_LINE_GRACE_MS (a client that doesn't read would keep the socket and
 * its buffers forever). A `slow_consumer` is reset at once, without a line:
 * the line would wait behind what the kernel holds (up to 4 MiB) for a
 * client that doesn't take it, and so would the kernel's memory.
 */
export function endConnection(socket: StreamSocket, code: ErrorCode | undefined, message: string): void {
  if (code === 'slow_consumer') {
    resetConnection(socket);
    return;
  }
  if (code !== undefined) socket.write(encodeError(code, message));
  socket.end(LAST_CHUNK);
  setTimeout(() => resetConnection(socket), LAST_LINE_GRACE_MS).unref();
}
