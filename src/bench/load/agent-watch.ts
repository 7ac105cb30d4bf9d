import { connect, type Socket } from 'node:net';
import { DEFAULT_BOOKMARK_INTERVAL_MS } from '../../client/shared-informers.js';
import { HEADERS, MEDIA, WATCH_KINDS, bearerAuthorization, paths, type WatchRequest } from '../../protocol/index.js';
import { nowMs } from '../clock.js';
import { COUNTER, bump, type AgentCounters } from './agent-counters.js';
import type { WatchDiagnosis } from './agent-messages.js';
import { ChunkedLines, headerOf } from './chunked-lines.js';
import { WatchEventTally } from './event-tally.js';
import { Backoff } from '../../util/backoff.js';
import { WATCH_BACKOFF, retryAfterMs } from './retry-wait.js';
import { SilenceWatchdog } from './silence-watchdog.js';
import { scanWatchLine } from './watch-line-scan.js';
import { WatchTrace } from './watch-trace.js';

/** Where and as whom an agent watches. */
export interface WatchTarget {
  host: string;
  port: number;
  org: string;
  token: string;
}

/** What the watch tells its agent. Times are nowMs() of the read that carried the news. */
export interface AgentWatchEvents {
  /** Every kind is at its tail on an open stream: after an initial list, or at once on an at_tail resume. */
  onReady(at: number): void;
  /**
   * The revision the agent has seen rose (reported only while every kind is
   * at its tail), at most once per read from the socket: the agent
   * reconciles a burst of changes that arrived together once, not once per
   * event.
   */
  onSeen(revision: number, at: number): void;
}

/** A response head must arrive within this; otherwise the attempt counts as a timeout. */
const HEAD_TIMEOUT_MS = 30_000;
/**
 * An open stream that delivers nothing for this long is taken for dead, as
 * the SDK's informers do (3 bookmark intervals; a listing stream is never
 * idle that long). A connection can die without a FIN or reset ever reaching
 * the agent: under TCP memory pressure the kernel drops the orphan a server
 * closed with data still unsent (TCPAbortOnTimeout), and an agent waiting
 * for bytes would wait forever, never at its tails, deaf to every change.
 */
export const STREAM_SILENCE_MS = 3 * DEFAULT_BOOKMARK_INTERVAL_MS;
const COMPACTED = 'revision_compacted';
const SILENT = 'silent';

type State = 'idle' | 'connecting' | 'answered' | 'open' | 'ended';

/**
 * An agent's watch stream (`POST .../events` for device, security-group and
 * organization, with the device token), spoken as HTTP/1.1 on a socket bound
 * to the agent's loopback source address. It keeps, per kind, whether the
 * tail was reached and the highest revision seen, and the last bookmark;
 * after any disconnect, or STREAM_SILENCE_MS without a byte on an open
 * stream, it resumes with each kind's `gt_revision` (and
 * `at_tail: true` for kinds past their tail), after the SDK's backoff or a
 * 429/503's Retry-After plus jitter. It runs until `stop()`.
 */
export class AgentWatch {
  lines = 0;
  bodyBytes = 0;
  /** `change`/`patch`/`delete` lines received, over every connection of this watch. */
  readonly tally = new WatchEventTally();
  private readonly rev: number[] = WATCH_KINDS.map(() => 0);
  private readonly tailed: boolean[] = WATCH_KINDS.map(() => false);
  private bookmark = 0;
  private lastSeen = 0;
  private running = false;
  private state: State = 'idle';
  private ready = false;
  private openedAt = 0;
  private retryAfter: number | undefined;
  private errorCode: string | undefined;
  private socket: Socket | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly reader: ChunkedLines;
  private readonly wait = new Backoff(WATCH_BACKOFF);
  private readonly trace = new WatchTrace();
  /** Undefined when the server sends no bookmarks (the raw floor): silence then means nothing. */
  private readonly silence: SilenceWatchdog | undefined;

  constructor(
    private readonly target: WatchTarget,
    private readonly localAddress: string,
    private readonly counters: AgentCounters,
    private readonly events: AgentWatchEvents,
    /** STREAM_SILENCE_MS against a server that sends bookmarks; undefined otherwise. */
    private readonly silenceMs: number | undefined,
  ) {
    if (silenceMs !== undefined) this.silence = new SilenceWatchdog(silenceMs, () => this.onSilent(silenceMs));
    this.reader = new ChunkedLines({
      onHead: (status, head) => this.onHead(status, head),
      onLine: (text, start, end) => this.onLine(text, start, end),
      onEnd: () => this.onEnd(),
    });
  }

  /** Open (200) and every kind at its tail. */
  get isReady(): boolean {
    return this.ready;
  }

  get isOpen(): boolean {
    return this.state === 'open';
  }

  /** Where this watch is (see WatchDiagnosis); `now` is nowMs() of the caller. */
  diagnose(now: number): Omit<WatchDiagnosis, 'deviceId'> {
    return {
      state: this.state,
      ready: this.ready,
      retryArmed: this.timer !== undefined,
      socketHeld: this.socket !== undefined,
      silenceMs: this.silenceMs ?? null,
      tailed: WATCH_KINDS.filter((_, k) => this.tailed[k]),
      revisions: [...this.rev],
      bookmark: this.bookmark,
      trace: this.trace.lines(now),
    };
  }

  /** Starts afresh: no revision known, every kind lists from the beginning. */
  start(): void {
    this.stop();
    this.rev.fill(0);
    this.tailed.fill(false);
    this.bookmark = 0;
    this.lastSeen = 0;
    this.wait.reset();
    this.running = true;
    this.connect();
  }

  /** Resets the connection (TCP RST, no TIME_WAIT: NOTES.md) and stops reconnecting. */
  stop(): void {
    this.running = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.silence?.stop();
    this.socket?.resetAndDestroy();
    this.socket = undefined;
    this.state = 'idle';
    this.ready = false;
  }

  /** Some kind would be listed from the beginning: nothing seen of it, or its place was lost. */
  private lists(): boolean {
    return WATCH_KINDS.some((_, k) => !this.tailed[k] && (this.rev[k] ?? 0) === 0);
  }

  private request(): string {
    const body: WatchRequest = WATCH_KINDS.map((kind, k) => {
      const rev = this.rev[k] ?? 0;
      // Patches and gzip, as the agent's informers ask for them: a change of a few members costs those members, a large one its packed bytes.
      if (this.tailed[k]) return { kind, gt_revision: Math.max(rev, this.bookmark), at_tail: true, patches: true, gzip: true };
      return rev > 0 ? { kind, gt_revision: rev, patches: true, gzip: true } : { kind, patches: true, gzip: true };
    });
    const json = JSON.stringify(body);
    this.trace.add(nowMs(), `POST ${json}`);
    return (
      `POST ${paths.events(this.target.org)} HTTP/1.1\r\nhost: ${this.target.host}:${this.target.port}\r\n` +
      `${HEADERS.authorization}: ${bearerAuthorization(this.target.token)}\r\n${HEADERS.contentType}: ${MEDIA.json}\r\n` +
      `content-length: ${Buffer.byteLength(json)}\r\n\r\n${json}`
    );
  }

  private connect(): void {
    this.timer = undefined;
    if (!this.running) return;
    bump(this.counters, COUNTER.watchRequests);
    if (this.lists()) bump(this.counters, COUNTER.watchLists);
    this.state = 'connecting';
    this.retryAfter = undefined;
    this.errorCode = undefined;
    this.reader.reset();
    const socket = connect({ host: this.target.host, port: this.target.port, localAddress: this.localAddress, noDelay: true });
    this.socket = socket;
    const headTimer = setTimeout(() => {
      if (this.socket !== socket || this.state !== 'connecting') return;
      this.trace.add(nowMs(), `no response head within ${HEAD_TIMEOUT_MS} ms: reset`);
      this.errorCode = 'timeout';
      socket.resetAndDestroy();
    }, HEAD_TIMEOUT_MS);
    socket.on('data', (buf: Buffer) => {
      if (this.socket !== socket) return;
      this.silence?.heard();
      const bad = this.reader.feed(buf);
      if (this.ready) this.reportSeen(nowMs());
      if (bad !== undefined) {
        bump(this.counters, COUNTER.unparsedLines);
        this.trace.add(nowMs(), `unreadable response (${bad}): reset`);
        this.errorCode = 'bad-response';
        socket.resetAndDestroy();
      }
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (this.socket === socket) this.errorCode ??= err.code ?? 'error';
    });
    socket.on('close', () => {
      clearTimeout(headTimer);
      if (this.socket === socket) this.onClose();
    });
    socket.write(this.request());
  }

  private onHead(status: number, head: string): boolean {
    this.trace.add(nowMs(), `HTTP ${status}`);
    if (status !== 200) {
      bump(this.counters, COUNTER.http('watch', status));
      if (status === 503 || status === 429) this.retryAfter = retryAfterMs(headerOf(head, HEADERS.retryAfter));
      this.state = 'answered';
      this.socket?.resetAndDestroy();
      return false;
    }
    bump(this.counters, COUNTER.watchOpened);
    this.state = 'open';
    this.openedAt = nowMs();
    this.silence?.start();
    if (this.tailed.every(Boolean)) this.becomeReady(this.openedAt);
    return true;
  }

  private onLine(text: string, start: number, end: number): void {
    // An empty line is a keepalive of a stream still listing (its bytes already fed the silence watchdog).
    if (end === start) return;
    this.lines++;
    this.bodyBytes += end - start + 1;
    const line = scanWatchLine(text, start, end);
    switch (line.type) {
      case 'change':
      case 'patch':
      case 'delete':
      case 'gzip':
        this.tally.add(line.type, line.kind, end - start + 1);
        if (line.revision > (this.rev[line.kind] ?? 0)) this.rev[line.kind] = line.revision;
        break;
      case 'tail': {
        const at = nowMs();
        if (line.revision > (this.rev[line.kind] ?? 0)) this.rev[line.kind] = line.revision;
        this.tailed[line.kind] = true;
        this.trace.add(at, `tail ${WATCH_KINDS[line.kind] ?? line.kind} at ${line.revision}`);
        if (!this.ready && this.tailed.every(Boolean)) this.becomeReady(at);
        break;
      }
      case 'bookmark':
        if (line.revision > this.bookmark) this.bookmark = line.revision;
        break;
      case 'error':
        bump(this.counters, COUNTER.streamError(line.code));
        this.trace.add(nowMs(), `error line ${line.code}`);
        // The stream ends after it; a compacted kind must list again.
        if (line.code === COMPACTED) {
          this.rev.fill(0);
          this.tailed.fill(false);
          this.bookmark = 0;
        }
        return;
      case 'unparsed':
        bump(this.counters, COUNTER.unparsedLines);
        return;
    }
  }

  private becomeReady(at: number): void {
    this.ready = true;
    this.events.onReady(at);
    this.reportSeen(at);
  }

  private reportSeen(at: number): void {
    const seen = Math.max(this.bookmark, ...this.rev);
    if (seen <= this.lastSeen) return;
    this.lastSeen = seen;
    this.events.onSeen(seen, at);
  }

  private onEnd(): void {
    bump(this.counters, COUNTER.watchEnded);
    this.trace.add(nowMs(), 'last chunk');
    this.state = 'ended';
    this.socket?.resetAndDestroy();
  }

  /** Nothing arrived on the open stream for `ms`: give the connection up and resume on a new one. */
  private onSilent(ms: number): void {
    if (this.state !== 'open' || !this.socket) return;
    this.trace.add(nowMs(), `nothing for ${ms} ms on the open stream: reset`);
    this.errorCode = SILENT;
    this.socket.resetAndDestroy();
  }

  private onClose(): void {
    this.silence?.stop();
    const healthyMs = this.state === 'open' || this.state === 'ended' ? nowMs() - this.openedAt : 0;
    const closedIn = this.state;
    if (this.state === 'open') bump(this.counters, this.errorCode === SILENT ? COUNTER.watchSilent : COUNTER.watchDropped);
    else if (this.state === 'connecting') bump(this.counters, COUNTER.connectError('watch', this.errorCode ?? 'closed'));
    this.socket = undefined;
    this.state = 'idle';
    this.ready = false;
    if (!this.running) return;
    if (this.retryAfter !== undefined) bump(this.counters, COUNTER.retryAfterWaits);
    const delay = this.wait.next(healthyMs, this.retryAfter);
    this.trace.add(nowMs(), `closed while ${closedIn}${this.errorCode ? ` (${this.errorCode})` : ''}; retry in ${Math.round(delay)} ms`);
    this.timer = setTimeout(() => this.connect(), delay);
  }
}
