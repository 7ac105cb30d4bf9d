import { responseHead } from './chunks.js';
import { Http2StreamSocket } from './http2-stream-socket.js';

/**
 * What a long-lived stream writes its lines to: the socket of an HTTP/1.1
 * connection the stream owner took out of node:http (a `net.Socket`, or the
 * TLS socket above one), or one HTTP/2 stream (`Http2StreamSocket`). The
 * contract, for both:
 * - every `write` is one or more whole chunks as `chunk()` encodes them;
 *   over HTTP/2 the chunks' framing is left out (HTTP/2 frames the body
 *   itself) and what reaches the client is the same lines;
 * - `end(LAST_CHUNK)` ends the body; `resetAndDestroy` cuts it at once (a
 *   TCP reset, or the HTTP/2 stream's RST_STREAM, leaving the connection's
 *   other streams alone);
 * - `writableLength` is what the stream holds unsent, which its kind bounds;
 * - 'close' comes once, whatever ended it; 'drain' when what was held left.
 * The endpoints are those of the TCP connection, or undefined over HTTP/2:
 * the kernel guard then can't find its send queue (the connection's queue is
 * shared by all its streams) and leaves it to the stream's own limit.
 */
export interface StreamSocket {
  readonly destroyed: boolean;
  readonly writable: boolean;
  readonly writableEnded: boolean;
  readonly writableFinished: boolean;
  readonly writableLength: number;
  readonly localAddress?: string | undefined;
  readonly localPort?: number | undefined;
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
  write(bytes: Uint8Array): boolean;
  end(bytes: Uint8Array): unknown;
  cork(): void;
  uncork(): void;
  destroy(): unknown;
  resetAndDestroy(): unknown;
  setNoDelay(noDelay?: boolean): unknown;
  on(event: 'close' | 'drain', listener: () => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
  once(event: 'close' | 'drain', listener: () => void): unknown;
  once(event: 'error', listener: (err: Error) => void): unknown;
}

/** Starts a stream's response: its head on HTTP/1.1 (the connection closes when the stream ends), its HEADERS frame on HTTP/2. */
export function startResponse(socket: StreamSocket, contentType: string): void {
  if (socket instanceof Http2StreamSocket) socket.respond(contentType);
  else socket.write(responseHead(contentType));
}
