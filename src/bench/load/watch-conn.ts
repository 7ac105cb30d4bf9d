import { connect, type Socket } from 'node:net';
import { HEADERS, MEDIA, type EventType, type WatchRequest } from '../../protocol/index.js';
import { nowMs } from '../clock.js';
import type { WatchSpec } from './messages.js';

/** What a connection reports to its worker. */
export interface ConnSink {
  /** A `change` or `delete` line with this revision arrived at `at` (nowMs()). */
  onChange(conn: WatchConn, revision: number, at: number): void;
  /** The connection's position moved (any line carrying a revision). */
  onPosition(conn: WatchConn, at: number): void;
  onErrorEvent(code: string): void;
  onUnparsed(): void;
  /** The connection became open, or stopped being open. */
  onOpenChange(conn: WatchConn, open: boolean): void;
}

export type ConnState = 'idle' | 'connecting' | 'open' | 'closed';

/** A response head, chunk-size line or partial NDJSON line longer than this is a protocol failure. */
const MAX_PENDING = 1 << 20;
const REVISION = '"revision":';
const TYPE = '"type":"';

type Phase = 'head' | 'size' | 'data' | 'crlf' | 'done';

/**
 * One watch stream held by a load worker: HTTP/1.1 spoken directly on a
 * net.Socket bound to a loopback source address. It does the least work a
 * client can: timestamps each read, decodes the chunked framing, finds line
 * ends, and reads only each line's event type and last `"revision":`, so the
 * client's cost stays small next to the server's. (node:http's client costs
 * several times more per chunk and would dominate the figures.)
 */
export class WatchConn {
  position: number;
  private _state: ConnState = 'idle';
  /** NDJSON bytes received since the last (re)open. */
  bodyBytes = 0;
  lines = 0;
  reachedAt = Number.NaN;
  closedByServer = false;
  private socket: Socket | undefined;
  private phase: Phase = 'head';
  private pending = '';
  private partialLine = '';
  private remaining = 0;
  private onHead: ((err: Error | undefined) => void) | undefined;

  constructor(
    readonly index: number,
    readonly endpointIndex: number,
    readonly localAddress: string,
    gtRevision: number,
    private readonly sink: ConnSink,
  ) {
    this.position = gtRevision;
  }

  get state(): ConnState {
    return this._state;
  }

  private set state(next: ConnState) {
    const was = this._state === 'open';
    this._state = next;
    if (was !== (next === 'open')) this.sink.onOpenChange(this, next === 'open');
  }

  /** Bytes read from the socket since the last (re)open: head, framing and body. */
  get wireBytes(): number {
    return this.socket?.bytesRead ?? 0;
  }

  /** Opens the stream; resolves once a 200 response head arrived, rejects on any failure. */
  open(spec: WatchSpec, gtRevision: number, atTail: boolean, timeoutMs: number): Promise<void> {
    const endpoint = spec.endpoints[this.endpointIndex % spec.endpoints.length];
    if (!endpoint) return Promise.reject(new Error('no endpoint'));
    const request: WatchRequest = [{ kind: 'device', gt_revision: gtRevision, at_tail: atTail }];
    const body = JSON.stringify(request);
    const headers = { ...spec.headers, [HEADERS.contentType]: MEDIA.json, 'content-length': String(Buffer.byteLength(body)) };
    const head =
      `POST ${spec.path} HTTP/1.1\r\nhost: ${endpoint.host}:${endpoint.port}\r\n` +
      Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('') +
      `\r\n${body}`;
    this.state = 'connecting';
    this.phase = 'head';
    this.pending = '';
    this.partialLine = '';
    this.bodyBytes = 0;
    this.reachedAt = Number.NaN;
    this.closedByServer = false;
    return new Promise((resolve, reject) => {
      const socket = connect({ host: endpoint.host, port: endpoint.port, localAddress: this.localAddress, noDelay: true });
      this.socket = socket;
      const timer = setTimeout(() => this.onHead?.(new Error(`no response head within ${timeoutMs} ms`)), timeoutMs);
      this.onHead = (err) => {
        clearTimeout(timer);
        this.onHead = undefined;
        if (err) {
          this.state = 'closed';
          socket.resetAndDestroy();
          reject(err);
        } else {
          this.state = 'open';
          resolve();
        }
      };
      socket.on('data', (buf: Buffer) => this.onData(buf));
      socket.on('error', (err) => {
        if (this.onHead) this.onHead(err);
        else this.state = 'closed';
      });
      socket.on('close', () => {
        if (this.onHead) this.onHead(new Error('connection closed before the response head'));
        else if (this.state === 'open') {
          this.state = 'closed';
          this.closedByServer = true;
        }
      });
      socket.write(head);
    });
  }

  /** Closes with a TCP reset, so no TIME_WAIT entries pile up between runs (NOTES.md). */
  close(): void {
    if (this.state === 'closed' || this.state === 'idle') return;
    this.state = 'closed';
    this.socket?.resetAndDestroy();
  }

  private onData(buf: Buffer): void {
    const at = nowMs();
    // latin1 maps bytes 1:1 to characters, so string offsets are byte offsets; every marker is ASCII.
    let s = buf.toString('latin1');
    if (this.pending !== '') {
      s = this.pending + s;
      this.pending = '';
    }
    let i = 0;
    while (i < s.length) {
      if (this.phase === 'data') {
        const end = Math.min(s.length, i + this.remaining);
        this.onBody(s, i, end, at);
        this.remaining -= end - i;
        i = end;
        if (this.remaining === 0) this.phase = 'crlf';
      } else if (this.phase === 'size') {
        const e = s.indexOf('\r\n', i);
        if (e < 0) break;
        const size = Number.parseInt(s.slice(i, e), 16);
        i = e + 2;
        if (!Number.isFinite(size)) return this.fail('bad chunk size');
        if (size === 0) {
          this.phase = 'done';
          return;
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
        const head = s.slice(i, e);
        i = e + 4;
        const status = Number(head.slice(9, 12));
        if (status !== 200) {
          this.onHead?.(new Error(`HTTP ${status}: ${s.slice(i, i + 300)}`));
          return;
        }
        if (!/\r\ntransfer-encoding:\s*chunked/i.test(head)) return this.fail('watch response is not chunked');
        this.phase = 'size';
        this.onHead?.(undefined);
      } else {
        return;
      }
    }
    if (i < s.length) {
      this.pending = s.slice(i);
      if (this.pending.length > MAX_PENDING) this.fail('response head or chunk header too long');
    }
  }

  private fail(why: string): void {
    this.sink.onUnparsed();
    if (this.onHead) this.onHead(new Error(why));
    else this.close();
  }

  private onBody(s: string, from: number, to: number, at: number): void {
    this.bodyBytes += to - from;
    let start = from;
    for (;;) {
      const nl = s.indexOf('\n', start);
      if (nl < 0 || nl >= to) break;
      if (this.partialLine !== '') {
        const line = this.partialLine + s.slice(start, nl);
        this.partialLine = '';
        this.onLine(line, 0, line.length, at);
      } else {
        this.onLine(s, start, nl, at);
      }
      start = nl + 1;
    }
    if (start < to) {
      this.partialLine += s.slice(start, to);
      if (this.partialLine.length > MAX_PENDING) this.fail('NDJSON line too long');
    }
  }

  private onLine(text: string, start: number, end: number, at: number): void {
    this.lines++;
    const t = text.indexOf(TYPE, start);
    if (t < 0 || t > end) return this.sink.onUnparsed();
    const typeEnd = text.indexOf('"', t + TYPE.length);
    const type = text.slice(t + TYPE.length, typeEnd);
    if (type === ('error' satisfies EventType)) {
      const m = /"code":"([a-z_]+)"/.exec(text.slice(start, end));
      return this.sink.onErrorEvent(m?.[1] ?? 'unknown');
    }
    const r = text.lastIndexOf(REVISION, end);
    if (r < start) return this.sink.onUnparsed();
    const revision = Number.parseInt(text.slice(r + REVISION.length, Math.min(end, r + REVISION.length + 20)), 10);
    if (!Number.isFinite(revision)) return this.sink.onUnparsed();
    if (revision > this.position) this.position = revision;
    if (type === ('change' satisfies EventType) || type === ('delete' satisfies EventType)) this.sink.onChange(this, revision, at);
    this.sink.onPosition(this, at);
  }
}
