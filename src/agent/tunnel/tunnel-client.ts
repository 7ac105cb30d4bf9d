import pino, { type Logger } from 'pino';
import type { ClientOptions } from 'ws';
import { AGENT_METHODS, ROUTES, RPC_ANSWER_TIMEOUT_MS, TUNNEL_PING_INTERVAL_MS, type DeviceStatusInput } from '../../protocol/index.js';
import { Backoff, type BackoffPolicy } from '../../util/backoff.js';
import { sleep } from '../../util/sleep.js';
import { AgentConnection, TunnelHandshakeError, type CloseInfo, type StatusRejection } from './agent-connection.js';
import { AgentMethodRegistry, type AgentMethodHandler } from './method-registry.js';
import { RequestRunner } from './request-runner.js';
import type { StatusSendOutcome } from './status-acks.js';
import { logRetry } from '../transient.js';
import { checkNoParams, type Check } from '../received/index.js';

export interface TunnelClientOptions {
  /**
   * The server's base URL (`http(s)://host:port[/prefix]`; `ws(s)://` works
   * too), or a function called before every connection attempt (to rotate
   * over several servers). `/api/agent/tunnel` is appended.
   */
  url: string | (() => string);
  /** The device token, or a function returning the current one (read at every attempt). */
  token: string | (() => string);
  /** The revision the agent has applied, reported by the built-in `ping`. */
  revision: () => number;
  /** Where methods are registered; default a new registry (see `methods`). */
  methods?: AgentMethodRegistry;
  logger?: Logger;
  /** Ping interval; the server is given up on after a whole interval of silence. Default 20 s. */
  pingIntervalMs?: number;
  /** Reconnect backoff (full jitter). Default 1 s doubling to 8 s, reset by a connection that lasted 20 s. */
  backoff?: Partial<BackoffPolicy>;
  /**
   * A connection older than this is replaced: the new one opens first, then
   * the old one drains. Each connection's age limit is drawn from
   * [0.9, 1] × this, so a fleet started together doesn't reconnect together.
   * Default 2 h.
   */
  maxConnectionAgeMs?: number;
  /** How long a replaced connection may keep answering its started requests. Default 35 s. */
  drainTimeoutMs?: number;
  /** Handlers running at once, over all connections. Default 64. */
  maxConcurrentRequests?: number;
  /** Requests waiting for a free handler slot; more are answered `too_many_requests` at once. Default 1024. */
  maxQueuedRequests?: number;
  /** Largest frame accepted. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** Default 10 s. */
  handshakeTimeoutMs?: number;
  /** Passed to `ws` (TLS settings, agent, ...); its `headers` are merged with the token's. */
  wsOptions?: ClientOptions;
  /** Observes connection state changes (logging, health endpoints, tests). Must not throw. */
  onStateChange?: (state: TunnelState) => void;
}

/** What the tunnel client is doing. */
export type TunnelState =
  | { readonly type: 'connecting'; readonly url: string; readonly attempt: number }
  | { readonly type: 'connected'; readonly url: string; readonly connections: number }
  | { readonly type: 'retrying'; readonly delayMs: number; readonly error?: Error; readonly close?: CloseInfo }
  | { readonly type: 'stopped' };

const DEFAULTS = {
  maxConnectionAgeMs: 2 * 60 * 60 * 1000,
  drainTimeoutMs: RPC_ANSWER_TIMEOUT_MS + 5_000,
  maxConcurrentRequests: 64,
  maxQueuedRequests: 1024,
  maxPayloadBytes: 1024 * 1024,
  handshakeTimeoutMs: 10_000,
};

// Capped like the SDK's (8 s): agents come back within seconds of a server restart.
export const TUNNEL_BACKOFF: BackoffPolicy = { initialMs: 1_000, maxMs: 8_000, resetAfterMs: 20_000 };

/** How long `sendStatus` waits for the server's ack by default (the server acks within ~250 ms). */
export const DEFAULT_STATUS_ACK_TIMEOUT_MS = 5_000;

/**
 * The server refused a status frame after its sender stopped waiting: one
 * sent as `sent` (answered only on error), or one whose ack timed out.
 */
export type StatusRejectedListener = (rejection: StatusRejection) => void;

/** A connection just opened (first connection, reconnection, or the replacement of an aged one). */
export type TunnelOpenListener = (info: { readonly url: string; readonly connections: number }) => void;

export interface SendStatusOptions {
  signal?: AbortSignal | undefined;
  /** How long to wait for the ack; default DEFAULT_STATUS_ACK_TIMEOUT_MS. */
  timeoutMs?: number | undefined;
}

/** `http://h:p/x` → `ws://h:p/x/api/agent/tunnel`. */
export function tunnelUrl(base: string): string {
  const u = new URL(base);
  if (u.protocol === 'http:') u.protocol = 'ws:';
  else if (u.protocol === 'https:') u.protocol = 'wss:';
  if (!u.pathname.endsWith(ROUTES.agentTunnel)) u.pathname = `${u.pathname.replace(/\/+$/, '')}${ROUTES.agentTunnel}`;
  return u.toString();
}

/**
 * The agent's end of the tunnel (docs/protocol.md "Agent tunnel and requests to
 * agents"): keeps one WebSocket open to the server with the device token
 * (two while an aged one is replaced), reconnects with exponential backoff
 * and full jitter, and serves the registered methods, many at once.
 *
 * `ping` is built in (`{pong: true, revision}`); the agent daemon registers
 * `status` and `force-sync` (and modules their own) with `register`.
 * `sendStatus` reports the device's status on the newest open connection
 * (waiting for the server's ack until it has acked one there); `onOpen`
 * tells of every connection opened, `onStatusRejected` of late refusals.
 * `run(signal)` runs until the signal aborts; then running handlers are
 * cancelled, answered, and the connections closed.
 */
export class TunnelClient {
  /** The method registry; `register` is a shortcut to it. */
  readonly methods: AgentMethodRegistry;
  readonly #options: TunnelClientOptions;
  readonly #logger: Logger;
  readonly #live = new Set<AgentConnection>();
  readonly #openListeners = new Set<TunnelOpenListener>();
  readonly #rejectedListeners = new Set<StatusRejectedListener>();
  /** The newest open connection: status frames go there. */
  #current: AgentConnection | undefined;
  #waiters: (() => void)[] = [];
  #running = false;
  /** Set while a connection is being outlived: asks for its replacement now (`replace()`). */
  #replaceNow: (() => void) | undefined;

  constructor(options: TunnelClientOptions) {
    this.#options = options;
    this.#logger = options.logger ?? pino({ level: 'silent' });
    this.methods = options.methods ?? new AgentMethodRegistry();
    this.methods.register(AGENT_METHODS.ping, async () => ({ pong: true, revision: options.revision() }), checkNoParams);
  }

  /** Registers a method (see AgentMethodRegistry.register); returns its unregister function. */
  register(method: string, handler: AgentMethodHandler, params?: Check<Record<string, unknown>>): () => void {
    return this.methods.register(method, handler, params);
  }

  /** True while at least one connection is open. */
  get connected(): boolean {
    for (const c of this.#live) if (c.open) return true;
    return false;
  }

  /** Open connections (2 while an aged one drains). */
  get connections(): number {
    return this.#live.size;
  }

  /** Resolves once a connection is open (at once if one is); rejects when `signal` aborts first. */
  whenConnected(signal?: AbortSignal): Promise<void> {
    if (this.connected) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onAbort = (): void => reject(signal?.reason);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
    });
  }

  /**
   * Calls `listener` after each connection opens (the first, every
   * reconnection, and the replacement of an aged connection), once it is
   * the one `sendStatus` uses. Returns the unsubscribe function. A listener
   * must not throw (what it throws is logged).
   */
  onOpen(listener: TunnelOpenListener): () => void {
    this.#openListeners.add(listener);
    return () => this.#openListeners.delete(listener);
  }

  /**
   * Tells `listener` of every status frame the server refused after its
   * sender stopped waiting (see StatusSendOutcome `sent`), on any
   * connection. Returns the unsubscribe function. A listener must not throw
   * (what it throws is logged).
   */
  onStatusRejected(listener: StatusRejectedListener): () => void {
    this.#rejectedListeners.add(listener);
    return () => this.#rejectedListeners.delete(listener);
  }

  /**
   * Sends the device's status (a `status` frame, docs/protocol.md "Agent tunnel") on
   * the newest open connection and resolves with its outcome: `acked` once
   * the server committed it, `sent` at once on a connection whose server
   * acked a frame before (it answers later only if it can't record it),
   * `rejected` with the server's error code,
   * `timeout` when no ack came within `timeoutMs` (an older server ignores
   * status frames), `not_connected` when no connection is open or it closed
   * before the ack. Rejects only with the signal's reason, when it aborts.
   */
  sendStatus(status: DeviceStatusInput, opts: SendStatusOptions = {}): Promise<StatusSendOutcome> {
    const conn = this.#current;
    if (!conn?.open) return opts.signal?.aborted ? Promise.reject(opts.signal.reason) : Promise.resolve({ type: 'not_connected' });
    return conn.sendStatus(status, opts.timeoutMs ?? DEFAULT_STATUS_ACK_TIMEOUT_MS, opts.signal);
  }

  /**
   * Replaces the open connection now as an aged one is: the next opens
   * (reading the token again), then the old one drains. For a renewed
   * device token, so the tunnel stops depending on the old one. No-op while
   * no connection is open (the next attempt reads the token anyway).
   */
  replace(): void {
    this.#replaceNow?.();
  }

  /** Keeps the tunnel up until `signal` aborts; resolves once everything is closed. One run at a time. */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new Error('the tunnel client is already running');
    this.#running = true;
    const runner = new RequestRunner(
      this.methods,
      {
        maxConcurrent: this.#options.maxConcurrentRequests ?? DEFAULTS.maxConcurrentRequests,
        maxQueued: this.#options.maxQueuedRequests ?? DEFAULTS.maxQueuedRequests,
      },
      this.#logger,
    );
    const backoff = new Backoff({ ...TUNNEL_BACKOFF, ...this.#options.backoff });
    const maxAge = this.#options.maxConnectionAgeMs ?? DEFAULTS.maxConnectionAgeMs;
    const drainMs = this.#options.drainTimeoutMs ?? DEFAULTS.drainTimeoutMs;
    let current: AgentConnection | undefined;
    try {
      while (!signal.aborted) {
        current ??= await this.connect(runner, backoff, signal);
        if (!current) break;
        const conn = current;
        const ageLimit = maxAge * (0.9 + 0.1 * Math.random());
        const outcome = await this.outlive(conn, ageLimit - (Date.now() - conn.openedAt), signal);
        if (outcome === 'stopped') break;
        if (outcome === 'aged' || outcome === 'replace') {
          if (outcome === 'aged') this.#logger.info({ ageMs: Date.now() - conn.openedAt }, 'tunnel reached its maximum age; replacing it');
          else this.#logger.info('replacing the tunnel (the device token was renewed)');
          current = await this.connect(runner, backoff, signal);
          conn.drain(drainMs);
          continue;
        }
        current = undefined;
        const delayMs = backoff.next(Date.now() - conn.openedAt);
        this.#logger.warn({ code: outcome.code, reason: outcome.reason, delayMs: Math.round(delayMs) }, 'tunnel closed; reconnecting');
        this.emit({ type: 'retrying', delayMs, close: outcome });
        await sleep(delayMs, signal);
      }
    } finally {
      runner.stop();
      for (const c of this.#live) c.drain(1_000);
      await Promise.all([...this.#live].map((c) => c.closed));
      this.#running = false;
      this.emit({ type: 'stopped' });
    }
  }

  /** Waits until `conn` closes, reaches its age, is to be replaced (`replace()`), or the client stops. */
  private async outlive(conn: AgentConnection, ageLeftMs: number, signal: AbortSignal): Promise<CloseInfo | 'aged' | 'replace' | 'stopped'> {
    const local = new AbortController();
    const onAbort = (): void => local.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const replaced = new Promise<'replace'>((resolve) => {
      this.#replaceNow = () => resolve('replace');
    });
    try {
      return await Promise.race([
        conn.closed,
        replaced,
        sleep(Math.max(0, ageLeftMs), local.signal).then((full) => (full ? ('aged' as const) : ('stopped' as const))),
      ]);
    } finally {
      this.#replaceNow = undefined;
      signal.removeEventListener('abort', onAbort);
      local.abort();
    }
  }

  /** Opens a connection, retrying with backoff; undefined when stopped first. */
  private async connect(runner: RequestRunner, backoff: Backoff, signal: AbortSignal): Promise<AgentConnection | undefined> {
    const o = this.#options;
    while (!signal.aborted) {
      let url = '';
      try {
        url = tunnelUrl(typeof o.url === 'function' ? o.url() : o.url);
        this.emit({ type: 'connecting', url, attempt: backoff.failures });
        const conn = await AgentConnection.open(
          {
            url,
            token: typeof o.token === 'function' ? o.token() : o.token,
            pingIntervalMs: o.pingIntervalMs ?? TUNNEL_PING_INTERVAL_MS,
            handshakeTimeoutMs: o.handshakeTimeoutMs ?? DEFAULTS.handshakeTimeoutMs,
            maxPayloadBytes: o.maxPayloadBytes ?? DEFAULTS.maxPayloadBytes,
            runner,
            logger: this.#logger,
            onStatusRejected: (rejection) => this.notifyRejected(rejection),
            ...(o.wsOptions ? { wsOptions: o.wsOptions } : {}),
          },
          signal,
        );
        this.#live.add(conn);
        this.#current = conn;
        void conn.closed.then(() => {
          this.#live.delete(conn);
          if (this.#current === conn) this.#current = undefined;
        });
        this.#logger.info({ url, connections: this.#live.size }, 'tunnel connected');
        this.emit({ type: 'connected', url, connections: this.#live.size });
        const waiters = this.#waiters;
        this.#waiters = [];
        for (const w of waiters) w();
        this.notifyOpen({ url, connections: this.#live.size });
        return conn;
      } catch (err) {
        if (signal.aborted) return undefined;
        const error = err instanceof Error ? err : new Error(String(err));
        const delayMs = backoff.next(0, error instanceof TunnelHandshakeError ? error.retryAfterMs : undefined);
        const refused = error instanceof TunnelHandshakeError && (error.status === 401 || error.status === 403);
        if (refused) this.#logger.error({ err: error, url, delayMs: Math.round(delayMs) }, 'tunnel connection failed; retrying');
        else logRetry(this.#logger, error, { url, delayMs: Math.round(delayMs) }, 'tunnel connection failed; retrying');
        this.emit({ type: 'retrying', delayMs, error });
        await sleep(delayMs, signal);
      }
    }
    return undefined;
  }

  private notifyOpen(info: { url: string; connections: number }): void {
    for (const listener of this.#openListeners) {
      try {
        listener(info);
      } catch (err) {
        this.#logger.error({ err }, 'tunnel onOpen listener failed');
      }
    }
  }

  private notifyRejected(rejection: StatusRejection): void {
    for (const listener of this.#rejectedListeners) {
      try {
        listener(rejection);
      } catch (err) {
        this.#logger.error({ err }, 'tunnel onStatusRejected listener failed');
      }
    }
  }

  private emit(state: TunnelState): void {
    try {
      this.#options.onStateChange?.(state);
    } catch (err) {
      this.#logger.error({ err }, 'tunnel onStateChange listener failed');
    }
  }
}
