import { constants, type ServerHttp2Stream } from 'node:http2';
import { HEADERS } from '../../protocol/index.js';

const CR = 0x0d;

/**
 * One HTTP/2 stream as a long-lived stream's socket (see StreamSocket): the
 * kinds keep writing the chunks they encode once for every stream, and this
 * writes what each chunk carries, a view of its bytes, as the stream's DATA.
 * A watch stream over HTTP/2 is one stream of a connection the browser's
 * tabs share, not a connection of its own: it is cut with RST_STREAM, and
 * the connection stays.
 */
export class Http2StreamSocket {
  readonly #stream: ServerHttp2Stream;

  constructor(stream: ServerHttp2Stream) {
    this.#stream = stream;
  }

  get destroyed(): boolean {
    return this.#stream.destroyed;
  }

  get writable(): boolean {
    return this.#stream.writable;
  }

  get writableEnded(): boolean {
    return this.#stream.writableEnded;
  }

  get writableFinished(): boolean {
    return this.#stream.writableFinished;
  }

  /** What the stream holds unsent: its DATA not yet taken by the session, including what the client's flow-control window holds back. */
  get writableLength(): number {
    return this.#stream.writableLength;
  }

  /** The response's HEADERS frame: 200 and the stream's media type. */
  respond(contentType: string): void {
    this.#stream.respond({
      ':status': 200,
      [HEADERS.contentType]: contentType,
      [HEADERS.cacheControl]: 'no-store',
      [HEADERS.contentTypeOptions]: 'nosniff',
    });
  }

  /** Writes what the chunks in `bytes` carry (several, when a list's page of events was encoded as one buffer). */
  write(bytes: Uint8Array): boolean {
    const stream = this.#stream;
    let at = 0;
    let ok = true;
    let corked = false;
    while (at < bytes.length) {
      const { start, length } = chunkAt(bytes, at);
      at = start + length + 2;
      if (length === 0) continue;
      const data = bytes.subarray(start, start + length);
      if (at >= bytes.length && !corked) return stream.write(data);
      if (!corked) {
        corked = true;
        stream.cork();
      }
      ok = stream.write(data);
    }
    if (corked) stream.uncork();
    return ok;
  }

  /** Ends the stream's DATA after what `bytes` carries (its last chunk carries nothing). */
  end(bytes: Uint8Array): void {
    this.write(bytes);
    this.#stream.end();
  }

  cork(): void {
    this.#stream.cork();
  }

  uncork(): void {
    this.#stream.uncork();
  }

  destroy(): void {
    this.#stream.destroy();
  }

  /** RST_STREAM: the client learns the stream was cut, and what it held is dropped; the connection's other streams go on. */
  resetAndDestroy(): void {
    if (this.#stream.destroyed) return;
    this.#stream.close(constants.NGHTTP2_CANCEL);
  }

  /** The connection's: never this stream's to change. */
  setNoDelay(): void {}

  // Listeners are called on this socket, as a net.Socket's are on it (the stream owner's close listener reads `this`).
  on(event: 'close' | 'drain', listener: () => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
  on(event: 'close' | 'drain' | 'error', listener: (this: Http2StreamSocket, err: Error) => void): this {
    this.#stream.on(event, (err: Error) => listener.call(this, err));
    return this;
  }

  once(event: 'close' | 'drain', listener: () => void): this;
  once(event: 'error', listener: (err: Error) => void): this;
  once(event: 'close' | 'drain' | 'error', listener: (this: Http2StreamSocket, err: Error) => void): this {
    this.#stream.once(event, (err: Error) => listener.call(this, err));
    return this;
  }
}

/** Where the data of the chunk starting at `at` is, and its length (`<hex length>\r\n<data>\r\n`). */
function chunkAt(bytes: Uint8Array, at: number): { start: number; length: number } {
  let length = 0;
  let i = at;
  for (; i < bytes.length && bytes[i] !== CR; i++) {
    const c = bytes[i] ?? 0;
    length = length * 16 + (c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x57);
  }
  return { start: i + 2, length };
}
