/**
 * An HTTP/2 client for tests: one connection (`node:http2`), plain requests
 * and long-lived line streams on it, as a browser's tabs share one.
 */
import { connect, constants, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import { HEADERS, MEDIA, bearerAuthorization } from '../../../src/protocol/index.js';

export interface H2Response {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One stream whose body is JSON lines, read as they come. */
export class H2LineStream {
  readonly lines: { type: string; value?: unknown }[] = [];
  status = 0;
  headers: IncomingHttpHeaders = {};
  /** Everything the body carried, as received. */
  raw = '';
  readonly ended: Promise<void>;
  #partial = '';

  constructor(readonly stream: ClientHttp2Stream) {
    stream.setEncoding('utf8');
    stream.on('data', (text: string) => {
      this.raw += text;
      const parts = (this.#partial + text).split('\n');
      this.#partial = parts.pop() ?? '';
      for (const line of parts) if (line !== '') this.lines.push(JSON.parse(line) as { type: string; value?: unknown });
    });
    this.ended = new Promise((resolve) => stream.once('close', () => resolve()));
    stream.on('error', () => undefined);
  }

  of(type: string): { type: string; value?: unknown }[] {
    return this.lines.filter((l) => l.type === type);
  }

  /** Cuts the stream (RST_STREAM CANCEL), as a tab that closes does. */
  cancel(): void {
    this.stream.close(constants.NGHTTP2_CANCEL);
  }
}

export class H2Client {
  private constructor(readonly session: ClientHttp2Session) {}

  static async connect(url: string, ca: string): Promise<H2Client> {
    const session = connect(url, { ca });
    session.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      session.once('connect', () => resolve());
      session.once('error', reject);
    });
    return new H2Client(session);
  }

  /** The protocol ALPN chose: `h2` when the server speaks HTTP/2. */
  get protocol(): string | undefined {
    return this.session.alpnProtocol;
  }

  #open(method: string, path: string, token: string, body?: unknown): ClientHttp2Stream {
    const headers: Record<string, string> = { ':method': method, ':path': path, [HEADERS.authorization]: bearerAuthorization(token) };
    if (body !== undefined) headers[HEADERS.contentType] = MEDIA.json;
    const stream = this.session.request(headers, { endStream: body === undefined });
    if (body !== undefined) stream.end(JSON.stringify(body));
    return stream;
  }

  async request(method: string, path: string, token: string, body?: unknown): Promise<H2Response> {
    const stream = this.#open(method, path, token, body);
    const headers = await new Promise<IncomingHttpHeaders>((resolve, reject) => {
      stream.once('response', resolve);
      stream.once('error', reject);
    });
    stream.setEncoding('utf8');
    let text = '';
    for await (const part of stream) text += String(part);
    return { status: Number(headers[':status']), headers, body: text };
  }

  /** Opens a long-lived stream (a watch or a page); resolves once its response headers came. */
  async lines(method: string, path: string, token: string, body?: unknown): Promise<H2LineStream> {
    const stream = this.#open(method, path, token, body);
    const reader = new H2LineStream(stream);
    reader.headers = await new Promise<IncomingHttpHeaders>((resolve, reject) => {
      stream.once('response', resolve);
      stream.once('error', reject);
    });
    reader.status = Number(reader.headers[':status']);
    return reader;
  }

  close(): void {
    this.session.destroy();
  }
}
