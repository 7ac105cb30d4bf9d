import { request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { HEADERS, MEDIA, paths, type WatchEvent, type WatchKind } from '../../../src/protocol/index.js';
import { LineSplitter } from './ndjson.js';

/** How a stream ended: `complete` when the chunked body ended with its last chunk. */
export interface StreamEnd {
  complete: boolean;
  error?: Error;
}

export interface WatchTarget {
  /** Server base URL (`http://127.0.0.1:port`). */
  url: string;
  org: string;
  token?: string | undefined;
}

/** An HTTP response read to its end: the shape of every pre-stream error. */
export interface PlainResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The error code of an error body, if it is one. */
  code: string | undefined;
}

/** One watch of a request body. */
export interface WatchSpec {
  kind: WatchKind;
  gt_revision?: number;
  at_tail?: boolean;
  patches?: boolean;
  gzip?: boolean;
}

export interface OpenOptions {
  /** Stop reading the socket as soon as the response head arrives. */
  paused?: boolean;
}

const DEFAULT_WAIT_MS = 20_000;

/**
 * A raw watch stream over its own TCP connection (no SDK): events parsed from
 * NDJSON as they arrive, a read cursor for tests, and the means to stop
 * reading (TCP backpressure) and to break the connection at any point.
 */
export class WatchStream {
  /** Every event received so far, in order. */
  readonly events: WatchEvent[] = [];
  /** Lines that were not JSON (a correct server sends none). */
  readonly badLines: string[] = [];
  /** Empty lines: keepalives of a stream not at its head yet. */
  keepalives = 0;
  bytes = 0;
  private cursor = 0;
  private endInfo: StreamEnd | undefined;
  private waiters: (() => void)[] = [];
  readonly ended: Promise<StreamEnd>;
  private readonly splitter = new LineSplitter();

  constructor(
    readonly res: IncomingMessage,
    readonly socket: Socket,
    paused: boolean,
  ) {
    if (paused) this.pause();
    this.ended = new Promise((resolve) => {
      res.on('data', (chunk: Buffer) => {
        this.bytes += chunk.length;
        for (const line of this.splitter.push(chunk)) this.line(line);
        this.notify();
      });
      // A body cut short ends with an 'aborted' error; `complete` tells them apart.
      res.on('error', (err) => {
        this.endInfo ??= { complete: false, error: err };
      });
      res.on('close', () => {
        const rest = this.splitter.rest;
        if (rest !== '') this.badLines.push(rest);
        this.endInfo = { complete: res.complete, ...(this.endInfo?.error ? { error: this.endInfo.error } : {}) };
        resolve(this.endInfo);
        this.notify();
      });
    });
  }

  get status(): number {
    return this.res.statusCode ?? 0;
  }

  get headers(): IncomingHttpHeaders {
    return this.res.headers;
  }

  get isEnded(): boolean {
    return this.endInfo !== undefined;
  }

  /** Events received but not yet taken with `next`/`waitFor`. */
  get unread(): number {
    return this.events.length - this.cursor;
  }

  private line(line: string): void {
    if (line === '') {
      this.keepalives++;
      return;
    }
    try {
      this.events.push(JSON.parse(line) as WatchEvent);
    } catch {
      this.badLines.push(line);
    }
  }

  private notify(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  private async changed(deadline: number, what: string): Promise<void> {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`watch: timed out waiting for ${what}; last events: ${JSON.stringify(this.events.slice(-3))}`);
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, left);
      this.waiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  /** The next unread event, or undefined once the stream ended with nothing left. */
  async next(timeoutMs = DEFAULT_WAIT_MS): Promise<WatchEvent | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const e = this.events[this.cursor];
      if (e !== undefined) {
        this.cursor++;
        return e;
      }
      if (this.endInfo) return undefined;
      await this.changed(deadline, 'the next event');
    }
  }

  /** The next unread event, 'ended' once the stream ended with nothing left, or 'timeout'. */
  async poll(timeoutMs: number): Promise<WatchEvent | 'ended' | 'timeout'> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const e = this.events[this.cursor];
      if (e !== undefined) {
        this.cursor++;
        return e;
      }
      if (this.endInfo) return 'ended';
      if (Date.now() >= deadline) return 'timeout';
      await this.changed(deadline + 1, 'an event').catch(() => undefined);
    }
  }

  /** Takes events until one matches; returns it. Throws if the stream ends or time runs out first. */
  async waitFor(pred: (e: WatchEvent) => boolean, timeoutMs = DEFAULT_WAIT_MS, what = 'a matching event'): Promise<WatchEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const e = this.events[this.cursor];
      if (e !== undefined) {
        this.cursor++;
        if (pred(e)) return e;
        continue;
      }
      if (this.endInfo) throw new Error(`watch: stream ended before ${what}; last events: ${JSON.stringify(this.events.slice(-3))}`);
      await this.changed(deadline, what);
    }
  }

  /** Takes exactly `n` events. */
  async take(n: number, timeoutMs = DEFAULT_WAIT_MS): Promise<WatchEvent[]> {
    const deadline = Date.now() + timeoutMs;
    const out: WatchEvent[] = [];
    while (out.length < n) {
      const e = await this.next(Math.max(1, deadline - Date.now()));
      if (e === undefined) throw new Error(`watch: stream ended after ${out.length} of ${n} events`);
      out.push(e);
    }
    return out;
  }

  /** Takes every event up to the end of the stream. */
  async rest(timeoutMs = DEFAULT_WAIT_MS): Promise<WatchEvent[]> {
    const deadline = Date.now() + timeoutMs;
    const out: WatchEvent[] = [];
    for (;;) {
      const e = await this.next(Math.max(1, deadline - Date.now()));
      if (e === undefined) return out;
      out.push(e);
    }
  }

  /** Stops reading the socket: the server's writes back up through TCP. */
  pause(): void {
    this.res.pause();
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
    this.res.resume();
  }

  /** Breaks the connection now (FIN, or RST with `reset`). */
  destroy(reset = false): void {
    if (reset && !this.socket.destroyed) this.socket.resetAndDestroy();
    else this.socket.destroy();
    this.res.destroy();
  }
}

function send(target: WatchTarget, body: unknown): Promise<IncomingMessage> {
  const u = new URL(paths.events(target.org), target.url);
  const payload = Buffer.from(JSON.stringify(body), 'utf8');
  const headers: Record<string, string | number> = {
    [HEADERS.contentType]: MEDIA.json,
    'content-length': payload.length,
  };
  if (target.token !== undefined) headers[HEADERS.authorization] = `Bearer ${target.token}`;
  return new Promise((resolve, reject) => {
    // One connection per stream: a stream ends with its connection.
    const req = request(u, { method: 'POST', headers, agent: false }, resolve);
    req.on('error', reject);
    req.end(payload);
  });
}

/** Opens a watch and fails unless the server answers 200 (the message carries the error body). */
export async function openWatch(target: WatchTarget, body: readonly WatchSpec[], opts: OpenOptions = {}): Promise<WatchStream> {
  const res = await send(target, body);
  if (res.statusCode !== 200) {
    const text = await readAll(res);
    throw new Error(`watch: expected 200, got ${res.statusCode}: ${text}`);
  }
  return new WatchStream(res, res.socket, opts.paused === true);
}

/** Sends a watch request that is expected to fail before streaming; reads the whole response. */
export async function watchRequest(target: WatchTarget, body: unknown): Promise<PlainResponse> {
  const res = await send(target, body);
  if (res.statusCode === 200) {
    // A stream where an error was expected: keep what came at first (for the failure message), then break it.
    const parts: Buffer[] = [];
    res.on('data', (c: Buffer) => parts.push(c));
    await new Promise((r) => setTimeout(r, 200));
    res.destroy();
    return { status: 200, headers: res.headers, text: Buffer.concat(parts).toString('utf8'), code: undefined };
  }
  const text = await readAll(res);
  let code: string | undefined;
  try {
    code = (JSON.parse(text) as { error?: { code?: string } }).error?.code;
  } catch {
    code = undefined;
  }
  return { status: res.statusCode ?? 0, headers: res.headers, text, code };
}

function readAll(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    res.on('data', (c: Buffer) => parts.push(c));
    res.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    res.on('error', reject);
  });
}

/** Takes events until `n` tails arrived; returns them all. */
export async function untilTails(s: WatchStream, n: number): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  let tails = 0;
  while (tails < n) {
    const e = await s.next();
    if (e === undefined) throw new Error('stream ended before its tails');
    out.push(e);
    if (e.type === 'tail') tails++;
  }
  return out;
}
