/** What a ChunkedLines reader reports while it reads one HTTP/1.1 response. */
export interface ChunkedLinesSink {
  /** The response head arrived. Return false to stop reading (e.g. not a 200). */
  onHead(status: number, head: string): boolean;
  /**
   * One complete NDJSON line of the body, as `text.slice(start, end)` (no
   * newline). `text` is latin1: offsets are bytes, and every marker the
   * bench looks for is ASCII.
   */
  onLine(text: string, start: number, end: number): void;
  /** The last chunk (`0\r\n\r\n`) arrived: the server ended the stream. */
  onEnd(): void;
}

/** A response head, chunk-size line or partial line longer than this is a protocol failure. */
const MAX_PENDING = 1 << 20;

type Phase = 'head' | 'size' | 'data' | 'crlf' | 'done';

/**
 * The least a client can do to follow a chunked NDJSON response (the same
 * decoding as load/watch-conn.ts): find the head's end, decode the chunk
 * framing, and cut lines. It doesn't parse JSON; callers read what they
 * need from each line.
 */
export class ChunkedLines {
  /** NDJSON bytes read since the last reset. */
  bodyBytes = 0;
  private phase: Phase = 'head';
  private pending = '';
  private partialLine = '';
  private remaining = 0;

  constructor(private readonly sink: ChunkedLinesSink) {}

  reset(): void {
    this.phase = 'head';
    this.pending = '';
    this.partialLine = '';
    this.remaining = 0;
    this.bodyBytes = 0;
  }

  /** Feeds bytes from the socket; returns why the response can't be read, or undefined. */
  feed(buf: Buffer): string | undefined {
    let s = buf.toString('latin1');
    if (this.pending !== '') {
      s = this.pending + s;
      this.pending = '';
    }
    let i = 0;
    while (i < s.length) {
      if (this.phase === 'data') {
        const end = Math.min(s.length, i + this.remaining);
        const bad = this.body(s, i, end);
        if (bad) return bad;
        this.remaining -= end - i;
        i = end;
        if (this.remaining === 0) this.phase = 'crlf';
      } else if (this.phase === 'size') {
        const e = s.indexOf('\r\n', i);
        if (e < 0) break;
        const size = Number.parseInt(s.slice(i, e), 16);
        i = e + 2;
        if (!Number.isFinite(size)) return 'bad chunk size';
        if (size === 0) {
          this.phase = 'done';
          this.sink.onEnd();
          return undefined;
        }
        this.remaining = size;
        this.phase = 'data';
      } else if (this.phase === 'crlf') {
        if (s.length - i < 2) break;
        i += 2;
        this.phase = 'size';
      } else if (this.phase === 'head') {
        const e = s.indexOf('\r\n\r\n', i);
        if (e < 0) break;
        const head = s.slice(i, e + 2);
        i = e + 4;
        const status = Number(head.slice(9, 12));
        if (!this.sink.onHead(status, head)) {
          this.phase = 'done';
          return undefined;
        }
        if (!/\r\ntransfer-encoding:\s*chunked/i.test(head)) return 'the response is not chunked';
        this.phase = 'size';
      } else {
        return undefined;
      }
    }
    if (i < s.length) {
      this.pending = s.slice(i);
      if (this.pending.length > MAX_PENDING) return 'response head or chunk header too long';
    }
    return undefined;
  }

  private body(s: string, from: number, to: number): string | undefined {
    this.bodyBytes += to - from;
    let start = from;
    for (;;) {
      const nl = s.indexOf('\n', start);
      if (nl < 0 || nl >= to) break;
      if (this.partialLine !== '') {
        const line = this.partialLine + s.slice(start, nl);
        this.partialLine = '';
        this.sink.onLine(line, 0, line.length);
      } else {
        this.sink.onLine(s, start, nl);
      }
      start = nl + 1;
    }
    if (start < to) {
      this.partialLine += s.slice(start, to);
      if (this.partialLine.length > MAX_PENDING) return 'NDJSON line too long';
    }
    return undefined;
  }
}

/** The value of header `name` (lower case) in a response head, or undefined. */
export function headerOf(head: string, name: string): string | undefined {
  const lower = head.toLowerCase();
  const at = lower.indexOf(`\r\n${name}:`);
  if (at < 0) return undefined;
  const from = at + name.length + 3;
  const end = head.indexOf('\r\n', from);
  return head.slice(from, end < 0 ? undefined : end).trim();
}
