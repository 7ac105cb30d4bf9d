import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { HEADERS, ROUTES } from '../../../src/protocol/index.js';

/** One HTTP/1.1 response as read off a raw socket. */
export interface RawResponse {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
}

/**
 * A client connection on a raw socket, so a test can send a request byte by
 * byte and see exactly when the server answers and when it closes.
 */
export class RawConnection {
  #received = Buffer.alloc(0);
  #waiters: (() => void)[] = [];
  /** Bytes written so far. */
  sent = 0;
  /** True once the socket closed (either side). */
  isClosed = false;
  /** Resolves when the socket has closed, whoever closed it. */
  readonly closed: Promise<void>;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.#received = Buffer.concat([this.#received, chunk]);
      this.#wake();
    });
    // The server closing (or resetting) the connection is what several tests wait for.
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        this.isClosed = true;
        this.#wake();
        resolve();
      }),
    );
  }

  /** `tls`: over TLS, trusting `ca` (resolves once the handshake is done). */
  static open(url: string, opts: { localAddress?: string; tls?: { ca: string } } = {}): Promise<RawConnection> {
    const u = new URL(url);
    return new Promise((resolve, reject) => {
      const where = { host: u.hostname, port: Number(u.port), ...(opts.localAddress ? { localAddress: opts.localAddress } : {}) };
      const socket = opts.tls ? tlsConnect({ ...where, ca: opts.tls.ca }) : connect(where);
      socket.once('error', reject);
      socket.once(opts.tls ? 'secureConnect' : 'connect', () => {
        socket.off('error', reject);
        resolve(new RawConnection(socket));
      });
    });
  }

  /** Bytes received so far. */
  get receivedBytes(): number {
    return this.#received.length;
  }

  /** Writes `data` unless the socket is closed; false when it was. */
  write(data: string): boolean {
    if (this.isClosed || this.socket.destroyed || !this.socket.writable) return false;
    this.socket.write(data);
    this.sent += Buffer.byteLength(data);
    return true;
  }

  /** The first complete response received; rejects if the socket closes or `timeoutMs` passes first. */
  async response(timeoutMs = 20_000): Promise<RawResponse> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const parsed = parseResponse(this.#received);
      if (parsed) return parsed;
      if (this.isClosed) throw new Error(`the connection closed before a whole response arrived (${this.#received.length} bytes: ${JSON.stringify(this.#received.toString('latin1').slice(0, 200))})`);
      if (Date.now() > deadline) throw new Error('no response in time');
      await this.#next(deadline - Date.now());
    }
  }

  /** `GET /healthz` on this connection (kept alive) and its response. */
  async healthz(): Promise<RawResponse> {
    this.#received = Buffer.alloc(0);
    this.write(`GET ${ROUTES.healthz} HTTP/1.1\r\nhost: test\r\n\r\n`);
    return this.response();
  }

  /**
   * Sends `byte` every `intervalMs` until the server closes the connection or
   * `maxBytes` were sent; resolves true if the server closed it.
   */
  async dribble(maxBytes: number, intervalMs: number, byte = ' '): Promise<boolean> {
    for (let i = 0; i < maxBytes && !this.isClosed; i++) {
      await Promise.race([this.closed, new Promise((r) => setTimeout(r, intervalMs))]);
      this.write(byte);
    }
    return this.isClosed;
  }

  destroy(): void {
    this.socket.destroy();
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  #next(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, Math.max(1, ms));
      this.#waiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }
}

function parseResponse(buf: Buffer): RawResponse | undefined {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine = '', ...lines] = buf.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers[HEADERS.contentLength] ?? 0);
  if (buf.length < end + 4 + length) return undefined;
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0), headers, body: buf.subarray(end + 4, end + 4 + length).toString('utf8') };
}

/** The head of a request with `headers`, written as a client would (`host` first). */
export function requestHead(method: string, path: string, headers: Record<string, string | number>): string {
  return `${method} ${path} HTTP/1.1\r\nhost: test\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
}

/** The error code of a catalog error body, or the body itself when it isn't one. */
export function codeOf(res: RawResponse): string {
  try {
    const parsed = JSON.parse(res.body) as { error?: { code?: unknown } };
    return typeof parsed.error?.code === 'string' ? parsed.error.code : res.body;
  } catch {
    return res.body;
  }
}
