import { IncomingMessage, type ServerResponse } from 'node:http';
import { Http2ServerRequest, Http2ServerResponse, type Http2Session } from 'node:http2';
import type { Server, Socket } from 'node:net';
import { Server as TlsServer, type TLSSocket } from 'node:tls';
import { Counter, Gauge } from 'prom-client';
import type { Logger } from 'pino';
import { DEFAULT_SETTINGS, type Settings } from '../config/settings.js';
import type { Metrics } from '../metrics.js';
import { ApiError } from '../errors.js';
import { openFilesLimit } from '../../util/open-files-limit.js';
import { rawErrorResponse } from './raw-error-response.js';
import { IdleConnections, TrackedConnection } from './idle-connections.js';
import { bodyPending } from './pending-body.js';

/** Which listener a connection arrived on. */
export type ListenerName = 'api' | 'private';

/** Which limit refused a connection, or closed an idle one to make room. */
export type RefusalReason = 'total' | 'per_source';

/** What a refused client is told to wait before connecting again. */
export const REFUSED_RETRY_AFTER_S = 5;

/** What a refused connection is written on plain HTTP, by the limit that refused it. */
const REFUSALS: Record<RefusalReason, string> = {
  total: refusal('the server holds as many connections as it accepts; retry later'),
  per_source: refusal('this address holds as many connections as the server accepts from one address; retry later'),
};

function refusal(message: string): string {
  return rawErrorResponse(new ApiError('too_many_connections', message, undefined, { retryAfterS: REFUSED_RETRY_AFTER_S }));
}

/** Refusals are logged at most this often (with the count since the last line): a flood must not flood the log too. */
const REFUSAL_LOG_INTERVAL_MS = 10_000;

/**
 * The most connections `openFiles` descriptors leave room for. The rest is
 * kept for what isn't a client connection (database and Redis pools, files,
 * the event loop), so that a full server still reaches its database and
 * answers on the connections it holds.
 */
export function connectionCeiling(configured: number, openFiles: number | undefined): number {
  if (openFiles === undefined) return configured;
  const reserve = Math.max(128, Math.ceil(openFiles / 10));
  return Math.max(1, Math.min(configured, openFiles - reserve));
}

/**
 * `--max-connections-per-source` when it is not set: three quarters of the
 * total limit in force. The total's default is sized for 10,000 agents
 * holding two connections each, plus half again; all of them may sit behind
 * one NAT (a site, a cluster's egress address), and every other address
 * still has a quarter of the server.
 */
export function defaultPerSourceLimit(maxTotal: number): number {
  return Math.max(1, Math.floor((maxTotal * 3) / 4));
}

/** `::ffff:192.0.2.1` and `192.0.2.1` are one source. */
function sourceOf(socket: Socket): string {
  const address = socket.remoteAddress ?? '';
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

/** The remote end of one TCP connection: how a TLS socket finds the connection it runs on. */
function peerOf(socket: Socket): string | undefined {
  const { remoteAddress, remotePort } = socket;
  return remoteAddress === undefined || remotePort === undefined ? undefined : `${remoteAddress}|${remotePort}`;
}

/**
 * node:http sets `upgrade` on a request it hands to an `upgrade` listener
 * (undeclared in its types, there since its first releases), only after it
 * constructed the request: looked at once it has.
 */
function noteUpgrade(c: TrackedConnection, req: IncomingMessage & { upgrade?: unknown }, idle: IdleConnections): void {
  if (req.upgrade !== true) return;
  c.upgraded = true;
  idle.update(c);
}

export interface AttachOptions {
  listener: ListenerName;
  /** Counts each remote address against `--max-connections-per-source`. */
  perSource: boolean;
  /**
   * Its idle connections (no request being served) may be closed to make
   * room for a new one at either limit. The server must then be created
   * with the limiter's `IncomingMessage`, so that upgrades are seen.
   */
  evictIdle?: boolean;
  logger: Logger;
}

/**
 * Counts the open connections of every listener of one server at their
 * `connection` event, against `--max-connections` (all listeners together:
 * they share the process's descriptors) and `--max-connections-per-source`
 * (public listener only: its peers are agents and operators, the private
 * listener's are replicas).
 *
 * At a limit, a new connection first takes the place of the connection of
 * that scope (the address, or all) idle the longest, on a listener attached
 * with `evictIdle`: one on which no request is being served (waiting for
 * its first request, for the rest of a request's headers or body, or for
 * the next request of a kept-alive connection), so nothing it sent was
 * acted on, or all of it was answered. Such a connection is closed at once
 * (on plain HTTP, one that never completed a request's headers is first
 * written the refusal below). A connection serving a request, a stream or a
 * tunnel is never closed to make room.
 *
 * When no connection of that scope is idle, the new connection is refused:
 * closed at once, before anything it sent is read; on plain HTTP it is
 * first written a 503 `too_many_connections` with `Retry-After` (with TLS
 * nothing is written: answering would cost a handshake). A client whose
 * request was already on its way may see a reset instead; either way
 * nothing it sent was acted on. The server makes one limiter and gives it
 * to every listener it opens.
 */
export class ConnectionLimiter {
  static fromSettings(metrics: Metrics, settings: Settings): ConnectionLimiter {
    return new ConnectionLimiter(metrics, settings.maxConnections, settings.maxConnectionsPerSource, openFilesLimit());
  }

  /** The total limit in force: `--max-connections`, lowered to what the open-files limit allows. */
  readonly maxTotal: number;
  /** The per-address limit in force (0: none). */
  readonly maxPerSource: number;
  /**
   * The request class of a server attached with `evictIdle` (node:http's
   * `IncomingMessage` server option): it tells the limiter when a request's
   * headers are complete, upgrades included, which no server event does
   * without taking the upgrades from their listeners.
   */
  readonly IncomingMessage: typeof IncomingMessage;
  #open = 0;
  readonly #bySource = new Map<string, number>();
  /** By the socket node:http serves: the TCP socket, or the TLS socket above it. */
  readonly #connections = new WeakMap<Socket, TrackedConnection>();
  /** HTTP/2 connections, by their session (its requests name their session, not a socket). */
  readonly #sessions = new WeakMap<Http2Session, TrackedConnection>();
  readonly #idle = new IdleConnections();
  readonly #openGauge: Gauge<'listener'>;
  readonly #refused: Counter<'listener' | 'reason'>;
  readonly #evicted: Counter<'listener' | 'reason'>;
  #ceilingLogged = false;
  #refusalLog = { at: 0, refused: 0, evicted: 0 };

  constructor(
    metrics: Metrics,
    private readonly configuredTotal: number,
    /** 0: no limit; undefined: defaultPerSourceLimit of the total in force. */
    perSource: number | undefined,
    private readonly openFiles: number | undefined,
  ) {
    this.maxTotal = connectionCeiling(configuredTotal, openFiles);
    this.maxPerSource = perSource ?? defaultPerSourceLimit(this.maxTotal);
    const registers = [metrics.registry];
    this.#openGauge = new Gauge({ name: 'fleetplane_connections_open', help: 'Open connections by listener.', labelNames: ['listener'] as const, registers });
    const limit = new Gauge({ name: 'fleetplane_connections_limit', help: 'Open connections accepted in all before new ones are refused.', registers });
    limit.set(this.maxTotal);
    this.#refused = new Counter({
      name: 'fleetplane_connections_refused_total',
      help: 'Connections closed at once because a connection limit was reached, by listener and limit (total, per_source).',
      labelNames: ['listener', 'reason'] as const,
      registers,
    });
    this.#evicted = new Counter({
      name: 'fleetplane_connections_evicted_total',
      help: 'Idle connections (no request being served) closed to make room for a new one at a connection limit, by listener and limit (total, per_source).',
      labelNames: ['listener', 'reason'] as const,
      registers,
    });
    const onHeaders = (req: IncomingMessage): void => this.#headersArrived(req);
    this.IncomingMessage = class TrackedIncomingMessage extends IncomingMessage {
      constructor(socket: Socket) {
        super(socket);
        onHeaders(this);
      }
    };
  }

  /** Counts and limits the connections `server` accepts from now on. */
  attach(server: Server, opts: AttachOptions): void {
    if (!this.#ceilingLogged && this.maxTotal < this.configuredTotal) {
      this.#ceilingLogged = true;
      // The default is sized for 10,000 agents; most machines' limit is lower, and that is no fault at each start.
      const level = this.configuredTotal === DEFAULT_SETTINGS.maxConnections ? 'info' : 'warn';
      opts.logger[level](
        { maxConnections: this.configuredTotal, openFilesLimit: this.openFiles, using: this.maxTotal },
        '--max-connections is above what the open-files limit leaves room for; using the lower limit (raise LimitNOFILE / ulimit -n to accept more)',
      );
    }
    this.#openGauge.set({ listener: opts.listener }, 0);
    const tls = server instanceof TlsServer;
    const perSource = opts.perSource && this.maxPerSource > 0;
    // With TLS the limits count the TCP socket, and requests arrive on the TLS socket above it: the remote end joins them.
    const byPeer = tls && opts.evictIdle ? new Map<string, TrackedConnection>() : undefined;
    // After the server's own listener: a refused socket is then one that closed at once, which every server handles.
    server.on('connection', (socket: Socket) => {
      const source = perSource ? sourceOf(socket) : undefined;
      const reason = this.#makeRoom(source, opts.logger);
      if (reason) {
        this.#refuse(socket, reason, !tls, opts.listener, opts.logger);
        return;
      }
      this.#admit(new TrackedConnection(socket, opts.listener, source, opts.evictIdle === true, !tls), byPeer);
    });
    if (!opts.evictIdle) return;
    if (byPeer) {
      // node:http2 makes an HTTP/2 connection's session before this listener's turn (below): found by its peer.
      server.on('session', (session: Http2Session) => {
        const peer = session.socket === undefined ? undefined : peerOf(session.socket);
        const c = peer === undefined ? undefined : byPeer.get(peer);
        if (c !== undefined) this.#sessions.set(session, c);
      });
      server.on('secureConnection', (tlsSocket: TLSSocket) => {
        const peer = peerOf(tlsSocket);
        const c = peer === undefined ? undefined : byPeer.get(peer);
        if (peer === undefined || c === undefined) return;
        byPeer.delete(peer);
        this.#connections.set(tlsSocket, c);
      });
    }
    server.on('request', (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => {
      if (req instanceof Http2ServerRequest) this.#streamStarted(req, res);
      else if (!(res instanceof Http2ServerResponse)) this.#requestStarted(req, res);
    });
  }

  /**
   * A request on an HTTP/2 connection: the connection is served (never
   * idle) until every stream it carries has ended, a long-lived watch
   * stream's included.
   */
  #streamStarted(req: Http2ServerRequest, res: ServerResponse | Http2ServerResponse): void {
    const session = req.stream.session;
    const c = session === undefined ? undefined : this.#sessions.get(session);
    if (c === undefined) return;
    c.requested = true;
    c.inFlight++;
    this.#idle.update(c);
    res.once('close', () => {
      c.inFlight--;
      this.#idle.update(c);
    });
  }

  /** Closes an idle connection where a limit is reached; the limit that still refuses, if any. */
  #makeRoom(source: string | undefined, logger: Logger): RefusalReason | undefined {
    if (source !== undefined && (this.#bySource.get(source) ?? 0) >= this.maxPerSource && !this.#evictIdle('per_source', source, logger)) return 'per_source';
    if (this.#open >= this.maxTotal && !this.#evictIdle('total', undefined, logger)) return 'total';
    return undefined;
  }

  #admit(c: TrackedConnection, byPeer: Map<string, TrackedConnection> | undefined): void {
    this.#open++;
    this.#openGauge.inc({ listener: c.listener });
    if (c.source !== undefined) this.#bySource.set(c.source, (this.#bySource.get(c.source) ?? 0) + 1);
    this.#connections.set(c.socket, c);
    this.#idle.update(c);
    const peer = byPeer ? peerOf(c.socket) : undefined;
    if (peer !== undefined) byPeer?.set(peer, c);
    c.socket.once('close', () => {
      this.#release(c);
      if (peer !== undefined && byPeer?.get(peer) === c) byPeer.delete(peer);
    });
  }

  /** Counts `c` out, once: at its close, or when it is closed to make room (before its close event, so the new one fits). */
  #release(c: TrackedConnection): void {
    if (c.released) return;
    c.released = true;
    this.#idle.remove(c);
    this.#open--;
    this.#openGauge.dec({ listener: c.listener });
    if (c.source === undefined) return;
    const left = (this.#bySource.get(c.source) ?? 1) - 1;
    if (left > 0) this.#bySource.set(c.source, left);
    else this.#bySource.delete(c.source);
  }

  /** Closes the connection idle the longest (of `source`, if given); false when there is none. */
  #evictIdle(reason: RefusalReason, source: string | undefined, logger: Logger): boolean {
    const c = this.#idle.oldest(source);
    if (c === undefined) return false;
    this.#evicted.inc({ listener: c.listener, reason });
    this.#logLimit('evicted', c.listener, reason, c.socket, logger);
    this.#release(c);
    // A connection that never completed a request gets the refusal a new one would; between requests, an answer nobody asked for would be misread.
    if (c.answerable && !c.requested && c.socket.writable) c.socket.write(REFUSALS[reason]);
    c.socket.destroy();
    return true;
  }

  #headersArrived(req: IncomingMessage): void {
    const c = this.#connections.get(req.socket);
    if (c === undefined) return;
    c.requested = true;
    process.nextTick(noteUpgrade, c, req, this.#idle);
  }

  #requestStarted(req: IncomingMessage, res: ServerResponse): void {
    const c = this.#connections.get(req.socket);
    if (c === undefined) return;
    c.inFlight++;
    if (bodyPending(req)) {
      c.arriving = req;
      req.once('end', () => {
        if (c.arriving !== req) return;
        c.arriving = undefined;
        this.#idle.update(c);
      });
    }
    this.#idle.update(c);
    res.once('close', () => {
      c.inFlight--;
      if (c.arriving === res.req) c.arriving = undefined;
      this.#idle.update(c);
    });
  }

  #refuse(socket: Socket, reason: RefusalReason, answer: boolean, listener: ListenerName, logger: Logger): void {
    this.#refused.inc({ listener, reason });
    this.#logLimit('refused', listener, reason, socket, logger);
    if (answer && socket.writable) socket.write(REFUSALS[reason]);
    socket.destroy();
  }

  #logLimit(what: 'refused' | 'evicted', listener: ListenerName, reason: RefusalReason, socket: Socket, logger: Logger): void {
    const now = Date.now();
    if (now - this.#refusalLog.at < REFUSAL_LOG_INTERVAL_MS) {
      this.#refusalLog[what]++;
      return;
    }
    const limits = { maxConnections: this.maxTotal, maxConnectionsPerSource: this.maxPerSource };
    const since = { refusedSinceLastLine: this.#refusalLog.refused, idleClosedSinceLastLine: this.#refusalLog.evicted };
    logger.warn(
      { listener, reason, source: sourceOf(socket), open: this.#open, ...limits, ...since },
      what === 'refused' ? 'connection refused: connection limit reached' : 'connection limit reached: closed the connection idle the longest to make room',
    );
    this.#refusalLog = { at: now, refused: 0, evicted: 0 };
  }
}
