import WebSocket, { type RawData } from 'ws';
import type { Logger } from 'pino';
import { KeepaliveRounds, RELAY_CLOSE_CODES, RELAY_SESSION_BUFFER_BYTES } from '../../protocol/index.js';
import type { OwnedStream, StreamEnd } from '../streams/index.js';
import { messageBuffer, sessionId } from './relay-frames.js';

/** The device a session was opened for, with the token it was opened with (its revocation ends the session). */
export interface RelayDevice {
  readonly orgId: string;
  readonly deviceId: string;
  readonly tokenId: string;
  /** The device's WireGuard public key (base64) when the session opened: what the session is keyed by. */
  readonly publicKey: string;
  /** The same key as its 32 bytes: written over a message's first 32 bytes as its source. */
  readonly keyBytes: Buffer;
  /** The organization id as its 16 bytes (link messages carry it). */
  readonly orgBytes: Buffer;
}

/** What the relay does with a session's messages and its end. */
export interface RelaySessionHooks {
  /** A binary message from the device (its framing not yet checked); the buffer is the relay's to rewrite and pass on. */
  received(session: RelaySession, message: Buffer): void;
  /** The session closed, for whatever reason; called once. */
  closed(session: RelaySession): void;
  logger: Logger;
}

/** How long a device has to complete a close the relay started before its connection is cut. */
const CLOSE_GRACE_MS = 2_000;

/**
 * The relay's end of one device's session (docs/protocol.md "Relays"): a
 * WebSocket of binary messages, owned by the stream owner (kind `relay`),
 * which ends it on revocation (4003) and shutdown (1012). A text message
 * closes it with 1003; ws closes one over its `maxPayload` with 1009. It
 * keeps the tunnel's keepalive rounds (4002 when the device stays silent a
 * round after a ping). What is sent to it is dropped, never queued, while
 * its unsent bytes are over RELAY_SESSION_BUFFER_BYTES.
 */
export class RelaySession implements OwnedStream {
  /** Its id in the session table and the relay registry: organization and key. */
  readonly id: string;
  readonly openedAt = Date.now();
  readonly #keepalive = new KeepaliveRounds();
  #closed = false;

  constructor(
    private readonly ws: WebSocket,
    readonly device: RelayDevice,
    private readonly hooks: RelaySessionHooks,
  ) {
    this.id = sessionId(device.orgId, device.publicKey);
    ws.on('message', (data: RawData, isBinary: boolean) => this.#received(data, isBinary));
    ws.on('ping', () => this.#keepalive.heard());
    ws.on('pong', () => this.#keepalive.heard());
    ws.on('error', (err) => hooks.logger.debug({ err, device: device.deviceId }, 'relay session socket error'));
    ws.once('close', (code: number) => this.#ended(code));
  }

  /** On the prototype: a stream of the stream owner. */
  get kind(): 'relay' {
    return 'relay';
  }

  get tokenId(): string {
    return this.device.tokenId;
  }

  get orgId(): string {
    return this.device.orgId;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  /** Bytes sent to the device and not yet taken by the kernel. */
  get held(): number {
    return this.ws.bufferedAmount;
  }

  /** The stream owner's end: revocation (the device reconnects and is refused) or shutdown (it reconnects elsewhere). */
  end(end: StreamEnd): void {
    if (end.cause === 'revoked') this.close(RELAY_CLOSE_CODES.revoked, 'the device token was revoked or expired');
    else if (end.cause === 'shutdown') this.close(RELAY_CLOSE_CODES.shutdown, 'server shutting down');
    else this.ws.terminate();
  }

  destroy(): void {
    this.ws.terminate();
  }

  /**
   * Sends a message (`src_key | record+`) unless the device has more than
   * RELAY_SESSION_BUFFER_BYTES unsent: false then, and nothing is sent (the
   * caller counts the drop). The buffer must not change until it is sent.
   */
  send(message: Buffer): boolean {
    if (this.ws.readyState !== WebSocket.OPEN || this.ws.bufferedAmount > RELAY_SESSION_BUFFER_BYTES) return false;
    this.ws.send(message, { binary: true });
    return true;
  }

  /** A newer session of the same device opened on this replica. */
  supersede(): void {
    this.close(RELAY_CLOSE_CODES.superseded, 'a newer relay session of this device opened');
  }

  /** One keepalive round, as the agent tunnel's (docs/protocol.md "Agent tunnel"). */
  heartbeat(): void {
    if (!this.open) return;
    const round = this.#keepalive.round();
    if (round === 'ping') this.ws.ping();
    else if (round === 'dead') {
      this.hooks.logger.info({ device: this.device.deviceId }, 'device stopped answering pings; closing its relay session');
      this.close(RELAY_CLOSE_CODES.pingTimeout, 'ping timeout');
    }
  }

  /** Closes the session; cuts it if the device doesn't complete the close within `graceMs`. */
  close(code: number, reason: string, graceMs = CLOSE_GRACE_MS): void {
    if (this.ws.readyState === WebSocket.CLOSED) return;
    if (this.ws.readyState !== WebSocket.CLOSING) this.ws.close(code, reason);
    setTimeout(() => this.ws.terminate(), graceMs).unref();
  }

  #received(data: RawData, isBinary: boolean): void {
    this.#keepalive.heard();
    if (this.ws.readyState !== WebSocket.OPEN) return;
    if (!isBinary) {
      this.close(RELAY_CLOSE_CODES.unsupported, 'the relay takes binary messages only');
      return;
    }
    this.hooks.received(this, messageBuffer(data));
  }

  #ended(code: number): void {
    if (this.#closed) return;
    this.#closed = true;
    this.hooks.logger.debug({ device: this.device.deviceId, code }, 'relay session closed');
    this.hooks.closed(this);
  }
}
