import type { Socket } from 'node:net';

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
export function resetConnection(socket: Socket): void {
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
