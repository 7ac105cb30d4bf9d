import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import WebSocket, { type RawData } from 'ws';
import {
  AGENT_ERROR_CODES,
  AGENT_METHODS,
  HEADERS,
  TUNNEL_FRAME_TYPES,
  bearerAuthorization,
  decodeTunnelFrame,
  paths,
  type TunnelControl,
  type TunnelResponse,
  type TunnelStatusFrame,
} from '../../protocol/index.js';
import { nowMs } from '../clock.js';
import { COUNTER, bump, type AgentCounters } from './agent-counters.js';
import { Backoff } from '../../util/backoff.js';
import { TUNNEL_BACKOFF, retryAfterMs } from './retry-wait.js';

/** What the tunnel tells its agent, and asks of it. */
export interface AgentTunnelEvents {
  onOpen(at: number): void;
  /** A `status_ack` arrived for frame `seq` (with the server's error, if any). */
  onStatusAck(seq: number, error: { code: string; message: string } | undefined, at: number): void;
  /** The revision the agent has applied, for the built-in `ping` request's answer. */
  revision(): number;
}

const HANDSHAKE_TIMEOUT_MS = 30_000;

type Frame = TunnelControl | TunnelResponse | TunnelStatusFrame;

/**
 * An agent's tunnel: a WebSocket to `GET /api/agent/tunnel` with the device
 * token (`ws` package), bound to the agent's loopback source address. It
 * answers `{"type":"ping"}` with a pong and the `ping` request with
 * `{pong: true, revision}` (any other method: `not_found`), passes
 * `status_ack` frames up, and reconnects after the agent tunnel's backoff
 * (or a 429/503's Retry-After plus jitter) until `stop()`.
 */
export class AgentTunnel {
  private ws: WebSocket | undefined;
  private socket: Socket | undefined;
  private running = false;
  private opened = false;
  private openedAt = 0;
  private errorCode: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly wait = new Backoff(TUNNEL_BACKOFF);

  constructor(
    private readonly url: string,
    private readonly token: string,
    private readonly localAddress: string,
    private readonly counters: AgentCounters,
    private readonly events: AgentTunnelEvents,
  ) {}

  /** `http://host:port` → the tunnel's `ws://` URL. */
  static urlOf(host: string, port: number): string {
    return `ws://${host}:${port}${paths.agentTunnel()}`;
  }

  get isOpen(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  start(): void {
    this.stop();
    this.wait.reset();
    this.running = true;
    this.connect();
  }

  /** Resets the connection (TCP RST) and stops reconnecting. */
  stop(): void {
    this.running = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    const ws = this.ws;
    this.ws = undefined;
    if (ws) {
      ws.removeAllListeners();
      ws.on('error', () => undefined);
      if (this.socket) this.socket.resetAndDestroy();
      else ws.terminate();
    }
    this.socket = undefined;
    this.opened = false;
  }

  /** Sends a frame if the tunnel is open; false otherwise. */
  send(frame: Frame): boolean {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  private connect(): void {
    this.timer = undefined;
    if (!this.running) return;
    bump(this.counters, COUNTER.tunnelAttempts);
    this.opened = false;
    this.errorCode = undefined;
    this.socket = undefined;
    const ws = new WebSocket(this.url, {
      headers: { [HEADERS.authorization]: bearerAuthorization(this.token) },
      localAddress: this.localAddress,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      perMessageDeflate: false,
    });
    this.ws = ws;
    ws.on('upgrade', (res: IncomingMessage) => {
      this.socket = res.socket;
    });
    ws.on('unexpected-response', (_req, res: IncomingMessage) => {
      if (this.ws !== ws) return;
      const status = res.statusCode ?? 0;
      bump(this.counters, COUNTER.http('tunnel', status));
      const retryAfter = status === 503 || status === 429 ? retryAfterMs(res.headers[HEADERS.retryAfter]) : undefined;
      // Handled here, so ws neither errors nor closes this attempt: drop it and schedule the next.
      res.socket.resetAndDestroy();
      ws.removeAllListeners();
      ws.on('error', () => undefined);
      this.ws = undefined;
      this.retry(0, retryAfter);
    });
    ws.on('open', () => {
      if (this.ws !== ws) return;
      this.opened = true;
      this.openedAt = nowMs();
      bump(this.counters, COUNTER.tunnelOpened);
      this.events.onOpen(this.openedAt);
    });
    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (this.ws === ws && !isBinary) this.onMessage(Array.isArray(data) ? Buffer.concat(data).toString() : data.toString());
    });
    ws.on('error', (err: Error & { code?: string }) => {
      if (this.ws === ws) this.errorCode ??= err.code ?? (/handshake has timed out/i.test(err.message) ? 'timeout' : 'error');
    });
    ws.on('close', (code: number) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      this.socket = undefined;
      if (this.opened) bump(this.counters, COUNTER.tunnelClosed(code));
      else bump(this.counters, COUNTER.connectError('tunnel', this.errorCode ?? 'closed'));
      this.retry(this.opened ? nowMs() - this.openedAt : 0, undefined);
    });
  }

  private retry(healthyMs: number, retryAfter: number | undefined): void {
    this.opened = false;
    if (!this.running) return;
    if (retryAfter !== undefined) bump(this.counters, COUNTER.retryAfterWaits);
    this.timer = setTimeout(() => this.connect(), this.wait.next(healthyMs, retryAfter));
  }

  private onMessage(text: string): void {
    const frame = decodeTunnelFrame(text);
    if (!frame) return;
    if ('type' in frame) {
      if (frame.type === TUNNEL_FRAME_TYPES.ping) {
        if (this.send({ type: TUNNEL_FRAME_TYPES.pong })) bump(this.counters, COUNTER.pingsAnswered);
      } else if (frame.type === TUNNEL_FRAME_TYPES.statusAck) {
        this.events.onStatusAck(frame.seq, frame.error, nowMs());
      }
      return;
    }
    if (!('method' in frame)) return;
    const answer: TunnelResponse =
      frame.method === AGENT_METHODS.ping
        ? { id: frame.id, result: { pong: true, revision: this.events.revision() } }
        : { id: frame.id, error: { code: AGENT_ERROR_CODES.notFound, message: `the bench agent serves only ${AGENT_METHODS.ping}` } };
    if (this.send(answer)) bump(this.counters, COUNTER.requestsAnswered);
  }
}
