import type { IncomingMessage } from 'node:http';
import { Http2ServerRequest } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import type { Gauge } from 'prom-client';
import type { WebSocket, WebSocketServer } from 'ws';
import { shuttingDown } from '../errors.js';
import { runPeriodically } from '../../util/periodic.js';
import { ownConnection } from './own-connection.js';
import { Http2StreamSocket } from './http2-stream-socket.js';
import type { StreamSocket } from './stream-socket.js';
import { KernelMemoryGuard, type GuardedStream } from './kernel-memory-guard.js';
import type { TcpMemorySource } from './proc-tcp.js';
import { ENDS, STREAM_KINDS, type OwnedStream, type StreamEnd, type StreamKind } from './owned-stream.js';
import type { StreamMetrics } from './stream-metrics.js';

/**
 * Least time between two sums of every stream's queued bytes when streams
 * pause. A sum reads every stream (5,000 per worker of a 10,000-agent
 * fleet), and a joining fleet pauses all the time: at 100 ms it took half a
 * second a minute. A longer spacing lets no queue grow unbounded meanwhile:
 * a stream pauses at its own limit, so the total can only go as far as the
 * streams' limits together until the next sum.
 */
const QUEUE_CHECK_SPACING_MS = 1_000;
/** How often the host's TCP memory is looked at while guarded streams are open (one read of /proc/net/sockstat). */
const KERNEL_CHECK_INTERVAL_MS = 50;

/** A stream whose kernel send queue the guard watches (watch streams, line streams): an owned stream that is also guarded. */
export type GuardedOwnedStream = OwnedStream & GuardedStream;

export interface StreamOwnerOptions {
  /** Bytes all streams together may hold queued (`--watch-queue-limit`, read at each check); past it the heaviest are ended `slow_consumer`. */
  queueLimit: () => number;
  /** A stream holding at most this many bytes in its kernel send queue is never closed by the kernel guard. */
  minKernelHeld: number;
  /** Where the kernel guard reads the host's TCP memory. */
  tcpMemory: TcpMemorySource;
  metrics: StreamMetrics;
  /** Where the sum of queued bytes is reported. */
  queuedBytes: Gauge;
  logger: Logger;
}

/**
 * The one owner of every long-lived stream of a replica: watch streams,
 * convergence streams, agent tunnels, relay sessions, links and lists, and
 * any kind added later. No stream outlives its request without passing
 * through it (test/server/stream-owner.test.ts fails if one does). It owns:
 * - the hand-over of the connection from node:http (`open`) or ws (`upgrade`);
 * - the bound on bytes all streams hold together (`checkQueue`), and the
 *   kernel TCP-memory guard over those whose send queues it can read;
 * - ending them: on revocation or expiry of their credential (`endRevoked`),
 *   and on shutdown within a grace period (`shutdown`), after which nothing
 *   opens.
 * The kinds keep what is theirs: what they write, their per-stream limit,
 * and how a stream's last line reads.
 */
export class StreamOwner {
  readonly #streams = new Set<OwnedStream>();
  /** Streams by the token they were opened with; one per token is the rule (an agent's), so it is kept bare, not in a set. */
  readonly #byToken = new Map<string, OwnedStream | Set<OwnedStream>>();
  readonly #guarded = new Set<GuardedOwnedStream>();
  readonly #open = Object.fromEntries(STREAM_KINDS.map((k) => [k, 0])) as Record<StreamKind, number>;
  readonly #stop = new AbortController();
  /** The connections under the streams, until each has closed: what a shutdown waits for. */
  readonly #connections = new Set<StreamSocket | WebSocket>();
  readonly #idle = new Set<() => void>();
  /** One listener for every connection (a closure per connection would be kept as long as it lives). */
  readonly #onConnectionClose: (this: StreamSocket | WebSocket) => void;
  #loops: Promise<void>[] = [];
  #closing = false;
  #lastQueueCheck = 0;
  /** Holds lists back and closes stalled streams when the host nears TCP memory pressure. */
  readonly kernelGuard: KernelMemoryGuard<GuardedOwnedStream>;

  constructor(private readonly o: StreamOwnerOptions) {
    const connections = this.#connections;
    const idle = this.#idle;
    this.#onConnectionClose = function (this: StreamSocket | WebSocket) {
      if (connections.delete(this) && connections.size === 0) for (const r of [...idle]) r();
    };
    this.kernelGuard = new KernelMemoryGuard({
      source: o.tcpMemory,
      minHeld: o.minKernelHeld,
      watchers: this.#guarded,
      shed: (s) =>
        this.#end(s, {
          cause: 'slow',
          code: 'slow_consumer',
          message: 'the server holds too much in its TCP buffers for streams that do not read; resume from your last revision',
        }),
      logger: o.logger,
    });
    o.metrics.observeOpen((kind) => this.count(kind));
  }

  start(): void {
    const onError = (what: string) => (err: unknown) => this.o.logger.error({ err }, `${what} failed`);
    this.#loops = [
      runPeriodically(KERNEL_CHECK_INTERVAL_MS, this.#stop.signal, () => this.#checkKernel(), onError('kernel TCP memory check')),
      runPeriodically(QUEUE_CHECK_SPACING_MS, this.#stop.signal, async () => this.checkQueue(true), onError('stream queue check')),
    ];
  }

  /** True once shutdown began: nothing opens any more. */
  get closing(): boolean {
    return this.#closing;
  }

  get size(): number {
    return this.#streams.size;
  }

  count(kind: StreamKind): number {
    return this.#open[kind];
  }

  /**
   * Turns a route's reply into a long-lived stream: throws 503 `unavailable`
   * when shutting down (the route answers it), else hijacks the reply, takes
   * the connection out of node:http (over HTTP/2, the request's stream),
   * and calls `make` with it. `make` starts the stream and returns it, or
   * undefined when it can't (the client left); the owner then holds it until
   * the kind releases it.
   */
  open<S extends OwnedStream>(reply: FastifyReply, make: (socket: StreamSocket) => S | undefined): S | undefined {
    if (this.#closing) throw shuttingDown('the server is shutting down; connect elsewhere');
    reply.hijack();
    const raw: FastifyReply['request']['raw'] | Http2ServerRequest = reply.request.raw;
    let socket: StreamSocket;
    if (raw instanceof Http2ServerRequest) {
      socket = new Http2StreamSocket(raw.stream);
    } else {
      // A stream holds its connection for good: node:http's per-request state would be most of what it costs.
      ownConnection(raw, reply.raw, this.o.logger);
      socket = raw.socket;
    }
    this.#track(socket);
    const stream = make(socket);
    if (stream) this.#add(stream);
    return stream;
  }

  /**
   * Completes a WebSocket upgrade and hands the socket to `make`, whose
   * stream the owner then holds. Refused (the socket closed) when shutting
   * down meanwhile.
   */
  upgrade(wss: WebSocketServer, req: IncomingMessage, socket: Duplex, head: Buffer, make: (ws: WebSocket) => OwnedStream | undefined): void {
    if (this.#closing) {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      if (this.#closing) {
        ws.terminate();
        return;
      }
      this.#track(ws);
      const stream = make(ws);
      if (stream) this.#add(stream);
    });
  }

  #track(conn: StreamSocket | WebSocket): void {
    if ('terminate' in conn ? conn.readyState === conn.CLOSED : conn.destroyed) return;
    this.#connections.add(conn);
    conn.once('close', this.#onConnectionClose);
  }

  /** Registers a guarded stream with the kernel guard (call from `make`, or once its connection is known). */
  guard(stream: GuardedOwnedStream): void {
    this.#guarded.add(stream);
  }

  #add(stream: OwnedStream): void {
    if (stream.closed) return;
    this.#streams.add(stream);
    this.#open[stream.kind]++;
    const id = stream.tokenId;
    if (id !== undefined) {
      const held = this.#byToken.get(id);
      if (held === undefined) this.#byToken.set(id, stream);
      else if (held instanceof Set) held.add(stream);
      else this.#byToken.set(id, new Set([held, stream]));
    }
    // Opened while shutdown began (its request was prepared before): it ends like the rest.
    if (this.#closing) this.#end(stream, ENDS.shutdown);
  }

  /** The kind's word that a stream closed (for whatever reason); once per stream. */
  release(stream: OwnedStream): void {
    if (!this.#streams.delete(stream)) return;
    this.#open[stream.kind]--;
    if (this.#guarded.delete(stream as GuardedOwnedStream)) this.kernelGuard.forget(stream as GuardedOwnedStream);
    const id = stream.tokenId;
    if (id !== undefined) {
      const held = this.#byToken.get(id);
      if (held === stream) this.#byToken.delete(id);
      else if (held instanceof Set) {
        held.delete(stream);
        if (held.size === 0) this.#byToken.delete(id);
      }
    }
  }

  /** Ends, with `forbidden`, every stream opened with these tokens (revoked, expired, or their device deleted). */
  endRevoked(tokenIds: readonly string[]): void {
    for (const id of tokenIds) {
      const held = this.#byToken.get(id);
      const streams = held === undefined ? [] : held instanceof Set ? [...held] : [held];
      for (const s of streams) this.#end(s, ENDS.revoked);
    }
  }

  #end(stream: OwnedStream, end: StreamEnd): void {
    if (stream.closed) return;
    this.o.metrics.ended(stream.kind, end.cause);
    stream.end(end);
  }

  /**
   * The bound on bytes queued to all streams together: past `queueLimit`,
   * the streams holding the most are ended `slow_consumer` (their clients
   * resume) until the total is under it. Called when a stream pauses (at
   * most every QUEUE_CHECK_SPACING_MS unless `force`) and every second.
   */
  checkQueue(force = false): void {
    const now = performance.now();
    if (!force && now - this.#lastQueueCheck < QUEUE_CHECK_SPACING_MS) return;
    this.#lastQueueCheck = now;
    let total = 0;
    const held: [OwnedStream, number][] = [];
    for (const s of this.#streams) {
      const bytes = s.held;
      total += bytes;
      if (bytes > 0) held.push([s, bytes]);
    }
    this.o.queuedBytes.set(total);
    const limit = this.o.queueLimit();
    if (total <= limit) return;
    held.sort((a, b) => b[1] - a[1]);
    const before = total;
    let ended = 0;
    for (const [s, bytes] of held) {
      if (total <= limit) break;
      ended++;
      total -= bytes;
      this.#end(s, ENDS.overQueued);
    }
    this.o.logger.warn({ limit, held: before, ended, heaviest: held[0]?.[1] ?? 0 }, 'stream queues over their limit: ended the streams holding the most');
  }

  async #checkKernel(): Promise<void> {
    if (this.#guarded.size > 0) await this.kernelGuard.check();
  }

  /**
   * Shutdown: nothing opens any more; every stream gets its last line
   * (`unavailable`) and closes. Resolves once every stream's connection has
   * closed, or once `graceMs` has passed, when those still open are cut.
   */
  async shutdown(graceMs: number): Promise<void> {
    this.#closing = true;
    this.#stop.abort();
    for (const s of [...this.#streams]) this.#end(s, ENDS.shutdown);
    if (this.#connections.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.#idle.add(resolve);
        timer = setTimeout(resolve, graceMs);
      });
      clearTimeout(timer);
      this.#idle.clear();
      const left = [...this.#connections];
      if (left.length > 0) {
        this.o.logger.warn({ connections: left.length, graceMs }, 'stream connections still open after the shutdown grace: cut');
        for (const c of left) {
          if ('terminate' in c) c.terminate();
          else c.destroy();
        }
      }
    }
    for (const s of [...this.#streams]) this.release(s);
    await Promise.all(this.#loops);
  }
}
