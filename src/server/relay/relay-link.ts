import WebSocket, { type RawData } from 'ws';
import type { Logger } from 'pino';
import { KeepaliveRounds, RELAY_CLOSE_CODES, RELAY_LINK_BUFFER_BYTES } from '../../protocol/index.js';
import type { OwnedStream, StreamEnd } from '../streams/index.js';
import { messageBuffer } from './relay-frames.js';
import type { RelayResult } from './relay-metrics.js';

/** Who is at the other end of a link, and who dialed it. */
export interface RelayLinkEnds {
  /** The other replica. */
  readonly peerId: string;
  /** The replica that dialed it (this one, or the peer). */
  readonly dialer: string;
  /** True on the dialing side. */
  readonly outgoing: boolean;
}

/** What a link tells its pool. */
export interface RelayLinkHooks {
  /** A message from the peer, its framing not yet checked. */
  received(message: Buffer): void;
  /** The link is open (an outgoing one once its handshake completed; an incoming one at once). */
  opened(link: RelayLink): void;
  /** The link closed, or never opened; called once. */
  closed(link: RelayLink): void;
  /** Counts packets sent over it (`forwarded`) or lost at its bound or with it (`dropped`). */
  count(result: RelayResult, packets: number, bytes: number): void;
  logger: Logger;
}

interface Queued {
  readonly message: Buffer;
  readonly packets: number;
  readonly bytes: number;
}

/** How long the peer has to complete a close before the connection is cut. */
const CLOSE_GRACE_MS = 2_000;

/**
 * One WebSocket between this replica and another, carrying link messages
 * (`org_id | dst_key | src_key | record+`) both ways, whichever side dialed
 * it. An outgoing link exists before its socket (while the dialer looks up
 * the peer's URL and signs its token) and queues what is sent meanwhile;
 * queued and unsent bytes together are bounded by RELAY_LINK_BUFFER_BYTES,
 * past which what is sent is dropped (counted). An incoming link is a
 * stream of the stream owner (kind `relay_link`): it ends at shutdown (1012).
 * Keepalive as the agent tunnel's, on both sides.
 */
export class RelayLink implements OwnedStream {
  readonly tokenId = undefined;
  readonly #keepalive = new KeepaliveRounds();
  #ws: WebSocket | undefined;
  #queue: Queued[] = [];
  #queued = 0;
  #closed = false;
  #wasOpen = false;
  /** Set when this side closes it on purpose (a duplicate, shutdown): its close is no failure. */
  retired = false;

  constructor(
    readonly ends: RelayLinkEnds,
    private readonly hooks: RelayLinkHooks,
    ws?: WebSocket,
  ) {
    if (ws) this.attach(ws);
  }

  get kind(): 'relay_link' {
    return 'relay_link';
  }

  get peerId(): string {
    return this.ends.peerId;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get open(): boolean {
    return this.#ws?.readyState === WebSocket.OPEN;
  }

  /** True once it was open at some point. */
  get wasOpen(): boolean {
    return this.#wasOpen;
  }

  /** Bytes queued for the peer, not yet taken by the kernel. */
  get held(): number {
    return (this.#ws?.bufferedAmount ?? 0) + this.#queued;
  }

  /** Gives an outgoing link its socket (once), or an incoming one its accepted socket. */
  attach(ws: WebSocket): void {
    if (this.#ws) throw new Error('a relay link has one socket');
    this.#ws = ws;
    ws.on('message', (data: RawData, isBinary: boolean) => {
      this.#keepalive.heard();
      if (isBinary) this.hooks.received(messageBuffer(data));
    });
    ws.on('ping', () => this.#keepalive.heard());
    ws.on('pong', () => this.#keepalive.heard());
    ws.on('error', (err) => this.hooks.logger.debug({ err, peer: this.peerId }, 'relay link socket error'));
    ws.once('close', (code: number) => this.#ended(code));
    if (this.#closed) {
      ws.terminate();
      return;
    }
    if (ws.readyState === WebSocket.OPEN) this.#opened();
    else ws.once('open', () => this.#opened());
  }

  /**
   * Sends a link message carrying `packets` packets (`bytes` of them), or
   * queues it while the link opens; drops it (counted) when the link is
   * closed or holds RELAY_LINK_BUFFER_BYTES. The buffer must not change until sent.
   */
  send(message: Buffer, packets: number, bytes: number): void {
    if (this.#closed || this.held + message.length > RELAY_LINK_BUFFER_BYTES) {
      this.hooks.count('dropped', packets, bytes);
      return;
    }
    const ws = this.#ws;
    if (ws?.readyState === WebSocket.OPEN) {
      ws.send(message, { binary: true });
      this.hooks.count('forwarded', packets, bytes);
      return;
    }
    this.#queue.push({ message, packets, bytes });
    this.#queued += message.length;
  }

  /** Gives up an outgoing link that could not be dialed (no URL, no token): its queue is dropped. */
  fail(reason: string): void {
    if (this.#closed) return;
    this.hooks.logger.warn({ peer: this.peerId, reason }, 'relay link could not be opened');
    if (this.#ws) this.#ws.terminate();
    else this.#ended(1006);
  }

  /** The stream owner's end (an incoming link): shutdown closes it (1012); anything else cuts it. */
  end(end: StreamEnd): void {
    this.retired = true;
    if (end.cause === 'shutdown') this.close(RELAY_CLOSE_CODES.shutdown, 'server shutting down');
    else this.destroy();
  }

  destroy(): void {
    if (this.#ws) this.#ws.terminate();
    else this.#ended(1006);
  }

  /** Closes it on purpose (a duplicate, shutdown); cut if the peer doesn't complete the close in time. */
  close(code: number, reason: string): void {
    this.retired = true;
    const ws = this.#ws;
    if (!ws) {
      this.#ended(code);
      return;
    }
    if (ws.readyState === WebSocket.CLOSED) return;
    if (ws.readyState === WebSocket.OPEN) ws.close(code, reason);
    else ws.terminate();
    setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref();
  }

  /** One keepalive round: ping a silent peer; cut one silent a round after its ping. */
  heartbeat(): void {
    const ws = this.#ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    const round = this.#keepalive.round();
    if (round === 'ping') ws.ping();
    else if (round === 'dead') {
      this.hooks.logger.warn({ peer: this.peerId }, 'replica stopped answering pings on its relay link; closing it');
      ws.terminate();
    }
  }

  #opened(): void {
    const ws = this.#ws;
    if (!ws || this.#closed) return;
    this.#wasOpen = true;
    const queue = this.#queue;
    this.#queue = [];
    this.#queued = 0;
    for (const q of queue) {
      ws.send(q.message, { binary: true });
      this.hooks.count('forwarded', q.packets, q.bytes);
    }
    this.hooks.opened(this);
  }

  #ended(code: number): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const q of this.#queue) this.hooks.count('dropped', q.packets, q.bytes);
    this.#queue = [];
    this.#queued = 0;
    this.hooks.logger.debug({ peer: this.peerId, code, outgoing: this.ends.outgoing }, 'relay link closed');
    this.hooks.closed(this);
  }
}
