import WebSocket, { type RawData } from 'ws';
import type { Logger } from 'pino';
import {
  AGENT_ERROR_CODES,
  KeepaliveRounds,
  TUNNEL_CLOSE_CODES,
  decodeTunnelFrame,
  type TunnelFrame,
  type TunnelRequest,
  type TunnelStatusAck,
  type TunnelStatusFrame,
} from '../../protocol/index.js';
import type { Delivery } from './delivery.js';
import type { OwnedStream, StreamEnd } from '../streams/index.js';

/** What every tunnel of one gateway shares: made once, so a tunnel holds a reference, not a copy. */
export interface ServerTunnelShared {
  /** Requests awaiting an answer on one tunnel; `full` past it. */
  maxPending: number;
  /** How long past its `deadline_ms` an answer is still awaited (the agent answers at its deadline). */
  answerGraceMs: number;
  /**
   * Records a status frame of the tunnel's device and calls `reply` at most
   * once with the ack to send back (not at all for a recorded frame whose
   * `ack` is `errors`); without it, status frames are answered `unavailable`
   * (the agent falls back to `PUT`).
   */
  onStatus?: (tunnel: ServerTunnel, frame: TunnelStatusFrame, reply: (ack: TunnelStatusAck) => void) => void;
  logger: Logger;
}

/** The device a tunnel was opened for, and the token it was opened with (its revocation closes the tunnel). */
export interface TunnelDevice {
  readonly deviceId: string;
  readonly orgId: string;
  readonly tokenId: string;
}

interface Pending {
  settle(d: Delivery): void;
}

let tunnelsOpened = 0;
const EMPTY_PENDING: ReadonlyMap<string, Pending> = new Map();

// One listener of each kind for every tunnel, finding its tunnel by its socket: a closure per
// tunnel and event would cost a few hundred bytes for as long as each agent stays connected.
const tunnelOf = new WeakMap<WebSocket, ServerTunnel>();
function onSocketMessage(this: WebSocket, data: RawData, isBinary: boolean): void {
  tunnelOf.get(this)?.received(data, isBinary);
}
/** A ping or a pong: the agent is there (ws answers its pings by itself). */
function onSocketControl(this: WebSocket): void {
  tunnelOf.get(this)?.heard();
}
function onSocketClose(this: WebSocket, code: number, reason: Buffer): void {
  tunnelOf.get(this)?.ended(code, reason);
}
function onSocketError(this: WebSocket, err: Error): void {
  const t = tunnelOf.get(this);
  t?.shared.logger.debug({ err, device: t.deviceId }, 'tunnel socket error');
}

/**
 * The server's end of one agent tunnel: sends request frames, matches the
 * answers by id, answers the agent's pings, and is given up on by
 * `heartbeat()` when the agent stays silent for a round after a ping.
 *
 * When it closes, its unanswered requests end `not_delivered` if the agent
 * closed it as drained (TUNNEL_CLOSE_CODES.drained: it never started them),
 * `lost` otherwise; then `onClosed` is called, once.
 */
export class ServerTunnel implements OwnedStream {
  /**
   * Tells this process's tunnels apart in its log lines. A number: a UUID string is built from 20 pieces,
   * a few hundred bytes for as long as the tunnel lives.
   */
  readonly id = ++tunnelsOpened;
  readonly openedAt = Date.now();
  /** Called once when the tunnel has closed (set by whoever keeps it, e.g. the tunnel table). */
  onClosed: ((t: ServerTunnel) => void) | undefined;
  // Made on first use: most tunnels never carry a request.
  #pending: Map<string, Pending> | undefined;
  #next = 0;
  readonly #keepalive = new KeepaliveRounds();
  #ended = false;
  #localCode: number | undefined;
  #closedWaiters: (() => void)[] | undefined;

  constructor(
    private readonly ws: WebSocket,
    readonly device: TunnelDevice,
    readonly shared: ServerTunnelShared,
  ) {
    tunnelOf.set(ws, this);
    ws.once('close', onSocketClose);
    ws.on('error', onSocketError);
    ws.on('message', onSocketMessage);
    ws.on('ping', onSocketControl);
    ws.on('pong', onSocketControl);
  }

  get deviceId(): string {
    return this.device.deviceId;
  }

  get orgId(): string {
    return this.device.orgId;
  }

  get tokenId(): string {
    return this.device.tokenId;
  }

  /** On the prototype: a stream of the stream owner (docs/protocol.md "Long-lived streams"). */
  get kind(): 'tunnel' {
    return 'tunnel';
  }

  /** The tunnel has closed and its requests have ended. */
  get closed(): boolean {
    return this.#ended;
  }

  /** Bytes sent but not yet taken by the kernel. */
  get held(): number {
    return this.ws.bufferedAmount;
  }

  /** The stream owner's end: revocation (the agent reconnects and is refused) or shutdown (it reconnects elsewhere). */
  end(end: StreamEnd): void {
    if (end.cause === 'revoked') this.close(TUNNEL_CLOSE_CODES.revoked, 'the device token was revoked or expired');
    else if (end.cause === 'shutdown') this.close(1012, 'server shutting down');
    else this.ws.terminate();
  }

  destroy(): void {
    this.ws.terminate();
  }

  /** Settles once the tunnel has closed and its requests have ended. */
  get whenClosed(): Promise<void> {
    if (this.#ended) return Promise.resolve();
    return new Promise((resolve) => (this.#closedWaiters ??= []).push(resolve));
  }

  get pending(): number {
    return this.#pending?.size ?? 0;
  }

  get full(): boolean {
    return this.pending >= this.shared.maxPending;
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  /**
   * Sends a request and resolves with how it ended (never rejects, except
   * with `signal`'s reason when the caller gives up; the agent's answer is
   * then dropped). Past `deadlineMs` plus the grace it ends `agent_error`
   * `deadline_exceeded`.
   */
  call(method: string, params: Record<string, unknown>, deadlineMs: number, signal: AbortSignal): Promise<Delivery> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (!this.open) return Promise.resolve({ kind: 'not_delivered', reason: 'the tunnel is closing' });
    if (this.full) return Promise.resolve({ kind: 'not_delivered', reason: 'the tunnel has too many pending requests' });
    const id = String(++this.#next);
    const frame: TunnelRequest = { id, method, params, deadline_ms: Math.max(1, Math.round(deadlineMs)) };
    return new Promise<Delivery>((resolve, reject) => {
      const finish = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.#pending?.delete(id);
      };
      const onAbort = (): void => {
        finish();
        reject(signal.reason);
      };
      const timer = setTimeout(() => {
        finish();
        resolve({
          kind: 'agent_error',
          code: AGENT_ERROR_CODES.deadlineExceeded,
          message: `the agent did not answer within ${frame.deadline_ms} ms`,
        });
      }, frame.deadline_ms + this.shared.answerGraceMs);
      signal.addEventListener('abort', onAbort, { once: true });
      (this.#pending ??= new Map<string, Pending>()).set(id, {
        settle: (d) => {
          finish();
          resolve(d);
        },
      });
      this.ws.send(JSON.stringify(frame), (err) => {
        if (!err) return;
        this.shared.logger.debug({ err, device: this.deviceId }, 'tunnel send failed');
        // The frame never left: safe to try elsewhere.
        this.#pending?.get(id)?.settle({ kind: 'not_delivered', reason: 'the tunnel failed while sending' });
      });
    });
  }

  /**
   * One keepalive round (docs/protocol.md "Agent tunnel"): an agent heard
   * from since the last round is left alone; a silent one gets a WebSocket
   * ping (a control frame, which WebSocket libraries answer by themselves);
   * one still silent a round after its ping is cut. An idle fleet of agents
   * that ping the server costs the server no ping of its own, and a silent
   * one two tiny frames a tunnel every other round: the allocations of JSON
   * pings to every tunnel kept V8 from ever seeing the process idle, so it
   * never gave back the heap a herd of joiners had grown.
   */
  heartbeat(): void {
    if (!this.open) return;
    const round = this.#keepalive.round();
    if (round === 'ping') this.ws.ping();
    else if (round === 'dead') {
      this.shared.logger.info({ device: this.deviceId, tunnel: this.id }, 'agent stopped answering pings; closing its tunnel');
      this.#localCode = TUNNEL_CLOSE_CODES.pingTimeout;
      this.ws.terminate();
    }
  }

  /** Closes the tunnel; cuts it if the agent doesn't complete the close in `graceMs`. */
  close(code: number, reason: string, graceMs = 2_000): void {
    if (this.ws.readyState === WebSocket.CLOSED) return;
    this.ws.close(code, reason);
    setTimeout(() => this.ws.terminate(), graceMs).unref();
  }

  private send(frame: TunnelFrame): void {
    if (this.open) this.ws.send(JSON.stringify(frame));
  }

  /** A ping or pong arrived (the socket's listeners call this). */
  heard(): void {
    this.#keepalive.heard();
  }

  /** The socket closed (its listener calls this): requests end, then `onClosed` and `closed`. */
  ended(code: number, reason: Buffer): void {
    if (this.#ended) return;
    this.failPending(this.#localCode ?? code, reason.toString());
    this.#ended = true;
    tunnelOf.delete(this.ws);
    this.onClosed?.(this);
    const waiters = this.#closedWaiters ?? [];
    this.#closedWaiters = undefined;
    for (const w of waiters) w();
  }

  /** A message arrived (the socket's listener calls this). */
  received(data: RawData, isBinary: boolean): void {
    this.#keepalive.heard();
    const text = isBinary ? undefined : Array.isArray(data) ? Buffer.concat(data).toString() : data.toString();
    const frame = text === undefined ? undefined : decodeTunnelFrame(text);
    if (!frame) {
      this.shared.logger.warn({ device: this.deviceId, binary: isBinary, sample: text?.slice(0, 200) }, 'ignored a malformed tunnel frame');
      return;
    }
    if ('type' in frame) {
      if (frame.type === 'ping') this.send({ type: 'pong' });
      else if (frame.type === 'status') this.onStatus(frame);
      else if (frame.type === 'status_ack') this.shared.logger.debug({ device: this.deviceId }, 'ignored a status_ack sent by an agent');
      return;
    }
    if ('method' in frame) {
      this.send({ id: frame.id, error: { code: AGENT_ERROR_CODES.notFound, message: 'the server serves no methods on the tunnel' } });
      return;
    }
    const pending = this.#pending?.get(frame.id);
    if (!pending) {
      this.shared.logger.debug({ device: this.deviceId, request: frame.id }, 'answer for a request nobody waits for any more');
      return;
    }
    if ('error' in frame) pending.settle({ kind: 'agent_error', code: frame.error.code, message: frame.error.message });
    else pending.settle({ kind: 'result', value: frame.result });
  }

  private onStatus(frame: TunnelStatusFrame): void {
    const record = this.shared.onStatus;
    if (!record) {
      this.send({ type: 'status_ack', seq: frame.seq, error: { code: 'unavailable', message: 'this server records no statuses on tunnels; use PUT' } });
      return;
    }
    try {
      record(this, frame, (ack) => this.send(ack));
    } catch (err) {
      this.shared.logger.error({ err, device: this.deviceId }, 'recording a tunnel status failed');
      this.send({ type: 'status_ack', seq: frame.seq, error: { code: 'internal', message: 'the status could not be recorded' } });
    }
  }

  private failPending(code: number, reason: string): void {
    const drained = code === TUNNEL_CLOSE_CODES.drained;
    for (const p of [...(this.#pending ?? EMPTY_PENDING).values()]) {
      p.settle(
        drained
          ? { kind: 'not_delivered', reason: 'the agent drained the tunnel' }
          : { kind: 'lost', reason: `the tunnel closed before the agent answered (${code}${reason ? ` ${reason}` : ''})` },
      );
    }
  }
}
