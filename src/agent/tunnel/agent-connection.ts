import WebSocket, { type ClientOptions, type RawData } from 'ws';
import type { Logger } from 'pino';
import {
  AGENT_ERROR_CODES,
  KeepaliveRounds,
  HEADERS,
  TUNNEL_CLOSE_CODES,
  bearerAuthorization,
  decodeTunnelFrame,
  STATUS_ACK_MODES,
  type DeviceStatusInput,
  type TunnelFrame,
  type TunnelRequest,
  type TunnelStatusAck,
} from '../../protocol/index.js';
import { parseRetryAfter } from '../../client/retry-after.js';
import type { RequestRunner } from './request-runner.js';
import { StatusAcks, type StatusSendOutcome } from './status-acks.js';

/** How a connection ended. `code` 1006 means it was lost without a close frame. */
export interface CloseInfo {
  readonly code: number;
  readonly reason: string;
}

/**
 * The server refused the WebSocket upgrade (401: bad token, 403: not a
 * device token, 429/503: overloaded or shutting down). `retryAfterMs`: its
 * Retry-After header, when it sent one.
 */
export class TunnelHandshakeError extends Error {
  override readonly name = 'TunnelHandshakeError';
  constructor(
    readonly status: number,
    readonly retryAfterMs?: number,
  ) {
    super(`the server refused the tunnel with HTTP ${status}`);
  }
}

export interface ConnectionOptions {
  url: string;
  token: string;
  pingIntervalMs: number;
  handshakeTimeoutMs: number;
  maxPayloadBytes: number;
  wsOptions?: ClientOptions;
  runner: RequestRunner;
  logger: Logger;
  /** The server refused a status frame nobody waits for any more (one sent with `ack: "errors"`, or one that timed out). */
  onStatusRejected?: (rejection: StatusRejection) => void;
}

/** A `status_ack` with an error for a frame whose sender stopped waiting. */
export interface StatusRejection {
  readonly seq: number;
  readonly code: string;
  readonly message: string;
}

/** How long a close handshake may take before the socket is cut. */
const CLOSE_GRACE_MS = 2_000;

/**
 * One open tunnel WebSocket: answers the server's requests through the
 * runner, sends a WebSocket ping after an interval of `pingIntervalMs` in
 * which the server sent nothing (its pings count: docs/protocol.md "Agent
 * tunnel"), and cuts the connection when the server stays silent for an
 * interval after that ping.
 *
 * Status frames (`sendStatus`) carry this connection's own increasing `seq`;
 * their acks are matched by it, and any still waiting when the connection
 * closes end `not_connected`. Until the server has acked one frame here,
 * every frame asks for an ack (which tells the agent that this server
 * records status frames at all); after that they ask only for errors.
 *
 * Draining (maximum connection age, shutdown): requests that arrive after
 * `drain()` are not started; once every started one is answered the
 * connection closes with TUNNEL_CLOSE_CODES.drained, which tells the server
 * that whatever is still unanswered may go through another tunnel.
 */
export class AgentConnection {
  readonly openedAt = Date.now();
  readonly closed: Promise<CloseInfo>;
  #unanswered = 0;
  #statusSeq = 0;
  readonly #acks = new StatusAcks();
  /** The server acked a status frame on this connection: it records them, and later frames ask only for errors. */
  #recordsStatus = false;
  #draining = false;
  readonly #keepalive = new KeepaliveRounds();
  #localClose: CloseInfo | undefined;
  #pingTimer: NodeJS.Timeout | undefined;
  #drainTimer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly ws: WebSocket,
    private readonly options: ConnectionOptions,
  ) {
    this.closed = new Promise((resolve) => {
      ws.once('close', (code: number, reason: Buffer) => {
        this.stopTimers();
        this.#acks.close();
        resolve(this.#localClose ?? { code, reason: reason.toString() });
      });
    });
    ws.on('message', (data: RawData, isBinary: boolean) => this.onMessage(data, isBinary));
    // ws answers the server's pings by itself; they, and its pongs, say the server is there.
    ws.on('pong', () => this.#keepalive.heard());
    ws.on('ping', () => this.#keepalive.heard());
    this.#pingTimer = setInterval(() => this.tick(), options.pingIntervalMs);
    this.#pingTimer.unref();
  }

  /** Opens a tunnel; rejects with TunnelHandshakeError, a network error, or the signal's reason. */
  static open(options: ConnectionOptions, signal: AbortSignal): Promise<AgentConnection> {
    const url = options.url;
    const ws = new WebSocket(url, {
      ...options.wsOptions,
      headers: { ...options.wsOptions?.headers, [HEADERS.authorization]: bearerAuthorization(options.token) },
      handshakeTimeout: options.handshakeTimeoutMs,
      maxPayload: options.maxPayloadBytes,
    });
    // Errors after the handshake end in 'close'; this keeps them from being unhandled.
    ws.on('error', (err: Error) => options.logger.debug({ err }, 'tunnel socket error'));
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        ws.terminate();
        reject(signal.reason);
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      const settle = (): void => signal.removeEventListener('abort', onAbort);
      ws.once('open', () => {
        settle();
        resolve(new AgentConnection(ws, options));
      });
      ws.once('unexpected-response', (req, res) => {
        settle();
        res.resume();
        req.destroy();
        const retryAfter = res.headers[HEADERS.retryAfter];
        reject(new TunnelHandshakeError(res.statusCode ?? 0, parseRetryAfter(typeof retryAfter === 'string' ? retryAfter : undefined, Date.now())));
      });
      ws.once('error', (err: Error) => {
        settle();
        reject(err);
      });
    });
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  get draining(): boolean {
    return this.#draining;
  }

  /** Requests started on this connection and not answered yet. */
  get unanswered(): number {
    return this.#unanswered;
  }

  /**
   * Sends the device's status in a status frame with this connection's next
   * `seq`, and resolves with what became of it (see StatusSendOutcome):
   * `not_connected` at once when the connection isn't open, `sent` at once
   * once the server has acked a frame here, `timeout` when no ack came
   * within `timeoutMs`. Rejects with the signal's reason when `signal`
   * aborts first.
   */
  sendStatus(status: DeviceStatusInput, timeoutMs: number, signal?: AbortSignal): Promise<StatusSendOutcome> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (!this.open) return Promise.resolve({ type: 'not_connected' });
    const seq = ++this.#statusSeq;
    if (this.#recordsStatus) {
      this.send({ type: 'status', seq, status, ack: STATUS_ACK_MODES.errors });
      return Promise.resolve({ type: 'sent' });
    }
    const outcome = this.#acks.wait(seq, timeoutMs, signal);
    this.send({ type: 'status', seq, status });
    return outcome;
  }

  /**
   * Stops starting requests; closes with `drained` once the started ones are
   * answered, or with 1001 after `timeoutMs` (then their callers can't know
   * whether they ran). Idempotent.
   */
  drain(timeoutMs: number): void {
    if (this.#draining) return;
    this.#draining = true;
    if (this.#unanswered === 0) return this.close(TUNNEL_CLOSE_CODES.drained, 'drained');
    this.#drainTimer = setTimeout(() => this.close(1001, 'drain timeout'), timeoutMs);
    this.#drainTimer.unref();
  }

  /** Starts the close handshake; cuts the socket if it doesn't finish in time. */
  close(code: number, reason: string): void {
    if (this.ws.readyState === WebSocket.CLOSED) return;
    this.ws.close(code, reason);
    setTimeout(() => this.ws.terminate(), CLOSE_GRACE_MS).unref();
  }

  private tick(): void {
    const round = this.#keepalive.round();
    if (round === 'ping') this.ws.ping();
    else if (round === 'dead') {
      this.options.logger.warn({ intervalMs: this.options.pingIntervalMs }, 'tunnel server stopped answering pings; reconnecting');
      this.#localClose = { code: TUNNEL_CLOSE_CODES.pingTimeout, reason: 'ping timeout' };
      this.ws.terminate();
    }
  }

  private onStatusAck(ack: TunnelStatusAck): void {
    if (ack.error === undefined && ack.seq <= this.#statusSeq) this.#recordsStatus = true;
    if (this.#acks.settle(ack)) return;
    if (ack.error === undefined) {
      this.options.logger.debug({ seq: ack.seq }, 'status ack for a frame nobody waits for any more');
      return;
    }
    this.options.onStatusRejected?.({ seq: ack.seq, code: ack.error.code, message: ack.error.message });
  }

  private stopTimers(): void {
    clearInterval(this.#pingTimer);
    clearTimeout(this.#drainTimer);
  }

  private send(frame: TunnelFrame): void {
    if (this.ws.readyState !== WebSocket.OPEN) {
      if ('id' in frame) this.options.logger.warn({ request: frame.id }, 'tunnel closed before the answer could be sent');
      return;
    }
    let text: string;
    try {
      text = JSON.stringify(frame);
    } catch (err) {
      if (!('id' in frame)) throw err;
      this.options.logger.warn({ err, request: frame.id }, 'agent method result is not JSON');
      text = JSON.stringify({ id: frame.id, error: { code: AGENT_ERROR_CODES.internal, message: 'the result is not JSON-serializable' } });
    }
    this.ws.send(text);
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    this.#keepalive.heard();
    const text = isBinary ? undefined : Array.isArray(data) ? Buffer.concat(data).toString() : data.toString();
    const frame = text === undefined ? undefined : decodeTunnelFrame(text);
    if (!frame) {
      this.options.logger.warn({ binary: isBinary, sample: text?.slice(0, 200) }, 'ignored a malformed tunnel frame');
      return;
    }
    if ('type' in frame) {
      if (frame.type === 'ping') this.send({ type: 'pong' });
      else if (frame.type === 'status_ack') this.onStatusAck(frame);
      else if (frame.type === 'status') this.options.logger.warn('ignored a status frame from the server: only agents send them');
      return;
    }
    if ('method' in frame) return this.onRequest(frame);
    this.options.logger.warn({ request: frame.id }, 'ignored a response frame: the agent sends no requests');
  }

  private onRequest(req: TunnelRequest): void {
    // Not started, not answered: the drained close lets the server deliver it elsewhere.
    if (this.#draining) return;
    this.#unanswered++;
    void this.options.runner.run(req).then((answer) => {
      this.#unanswered--;
      this.send(answer);
      if (this.#draining && this.#unanswered === 0) this.close(TUNNEL_CLOSE_CODES.drained, 'drained');
    });
  }
}
