import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import WebSocket, { WebSocketServer } from 'ws';
import { HEADERS, ROUTES, bearerAuthorization } from '../../protocol/index.js';
import { authorizeRelayLink, signRelayLinkToken } from '../access/index.js';
import { ApiError, shuttingDown } from '../errors.js';
import { rawErrorResponse } from '../http/raw-error-response.js';
import type { StreamOwner } from '../streams/index.js';
import { equalJitterDelay } from '../../util/backoff.js';
import { LINK_MAX_MESSAGE_BYTES } from './relay-frames.js';
import { RelayLink, type RelayLinkHooks } from './relay-link.js';
import type { RelayResult } from './relay-metrics.js';

export interface RelayLinksOptions {
  replicaId: string;
  /** The replicas' shared private key (`--private-secret`): signs and checks link tokens. */
  key: Uint8Array;
  /** A live replica's private URL; undefined when it is gone or has none. */
  privateUrlOf(replicaId: string): Promise<string | undefined>;
  /** A link message from another replica (to deliver here, never further). */
  received(message: Buffer): void;
  /** No link to `peerId` is left open: where keys are held there is no longer known. */
  lost(peerId: string): void;
  count(result: RelayResult, packets: number, bytes: number): void;
  /** How many links are open changed. */
  changed(open: number): void;
  /** Holds the incoming links as streams (their upgrade, and their end at shutdown). */
  owner: StreamOwner;
  logger: Logger;
}

/** After a lost link, no new dial to that replica for this long at first (doubling, jittered, up to the maximum). */
const REDIAL_MIN_MS = 250;
const REDIAL_MAX_MS = 5_000;

/**
 * The links between this replica and the others (docs/protocol.md
 * "Relays"): one WebSocket per pair, used both ways. A replica dials a peer
 * the first time it has something for it and no link to it is open or
 * opening; the peer then sends back over the same link. When both dialed at
 * once, both keep the link dialed by the replica whose id sorts first and
 * close the other. A link that closes (unless on purpose, or while another
 * to the same peer stays open) is a failure: `lost` is told, and the next
 * dial to that peer waits a backoff, dropping what is sent to it meanwhile.
 */
export class RelayLinks {
  readonly #byPeer = new Map<string, RelayLink[]>();
  readonly #redial = new Map<string, { at: number; failures: number }>();
  readonly #wss = new WebSocketServer({ noServer: true, clientTracking: false, maxPayload: LINK_MAX_MESSAGE_BYTES });
  readonly #hooks: RelayLinkHooks;
  #open = 0;
  #closing = false;

  constructor(private readonly o: RelayLinksOptions) {
    this.#hooks = {
      received: (m) => o.received(m),
      opened: (l) => this.#opened(l),
      closed: (l) => this.#closed(l),
      count: (r, p, b) => o.count(r, p, b),
      logger: o.logger,
    };
  }

  /** Links open now. */
  get open(): number {
    return this.#open;
  }

  /** Sends a link message to `peerId`, dialing it if no link is open or opening; drops it (counted) while dialing it is backing off. */
  send(peerId: string, message: Buffer, packets: number, bytes: number): void {
    let link = this.#current(peerId);
    if (!link) {
      const redial = this.#redial.get(peerId);
      if (this.#closing || (redial && performance.now() < redial.at)) {
        this.o.count('dropped', packets, bytes);
        return;
      }
      link = this.#dial(peerId);
    }
    link.send(message, packets, bytes);
  }

  /**
   * The private listener's upgrade of `GET /private/v1/relay`: authorizes
   * the dialing replica (401 otherwise) and hands the socket to the stream
   * owner. False for another path (the listener refuses it).
   */
  accept(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    if ((req.url ?? '').split('?')[0] !== ROUTES.privateRelay) return false;
    socket.on('error', (err) => this.o.logger.debug({ err }, 'relay link upgrade socket error'));
    const refuse = (err: ApiError): void => {
      socket.end(rawErrorResponse(err));
    };
    if (this.#closing) {
      refuse(shuttingDown('the server is shutting down'));
      return true;
    }
    authorizeRelayLink(req.headers, this.o.key, this.o.replicaId).then(
      (principal) => {
        if (socket.destroyed) return;
        this.o.owner.upgrade(this.#wss, req, socket, head, (ws) => {
          if (this.#closing) {
            ws.close(1012, 'server shutting down');
            return undefined;
          }
          const link = new RelayLink({ peerId: principal.replicaId, dialer: principal.replicaId, outgoing: false }, this.#hooks);
          this.#add(link);
          link.attach(ws);
          return link;
        });
      },
      (err: unknown) => {
        const api = err instanceof ApiError ? err : new ApiError('internal', undefined, undefined, { cause: err });
        this.o.logger.warn({ err: api.message, remote: req.socket.remoteAddress }, 'relay link refused');
        refuse(api);
      },
    );
    return true;
  }

  /** One keepalive round on every link. */
  heartbeat(): void {
    for (const links of this.#byPeer.values()) for (const l of links) l.heartbeat();
  }

  /** Closes every link (shutdown, after the stream owner ended the incoming ones); nothing is dialed after. */
  close(): void {
    this.#closing = true;
    for (const links of [...this.#byPeer.values()]) for (const l of [...links]) l.close(1012, 'server shutting down');
    this.#wss.close();
  }

  /** An open link to `peerId`, else one being opened. */
  #current(peerId: string): RelayLink | undefined {
    const links = this.#byPeer.get(peerId);
    if (!links) return undefined;
    return links.find((l) => l.open) ?? links.find((l) => !l.closed && !l.wasOpen);
  }

  #add(link: RelayLink): void {
    const links = this.#byPeer.get(link.peerId);
    if (links) links.push(link);
    else this.#byPeer.set(link.peerId, [link]);
  }

  #dial(peerId: string): RelayLink {
    const link = new RelayLink({ peerId, dialer: this.o.replicaId, outgoing: true }, this.#hooks);
    this.#add(link);
    void (async () => {
      const base = await this.o.privateUrlOf(peerId);
      if (!base) return link.fail('the replica is gone or has no private URL');
      const token = await signRelayLinkToken(this.o.key, this.o.replicaId, peerId);
      if (link.closed) return;
      const url = new URL(ROUTES.privateRelay, base);
      url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
      link.attach(
        new WebSocket(url, {
          headers: { [HEADERS.authorization]: bearerAuthorization(token) },
          maxPayload: LINK_MAX_MESSAGE_BYTES,
          perMessageDeflate: false,
          handshakeTimeout: 5_000,
        }),
      );
    })().catch((err: unknown) => link.fail(err instanceof Error ? err.message : String(err)));
    return link;
  }

  #opened(link: RelayLink): void {
    this.#redial.delete(link.peerId);
    this.#count();
    const open = (this.#byPeer.get(link.peerId) ?? []).filter((l) => l.open);
    if (open.length < 2) return;
    // Both replicas dialed at once: each keeps the link the replica whose id sorts first dialed, the newest of those.
    const first = this.o.replicaId < link.peerId ? this.o.replicaId : link.peerId;
    const keep = open.filter((l) => l.ends.dialer === first).at(-1) ?? open.at(-1);
    for (const l of open) if (l !== keep) l.close(1000, 'duplicate relay link');
  }

  #closed(link: RelayLink): void {
    if (!link.ends.outgoing) this.o.owner.release(link);
    const links = this.#byPeer.get(link.peerId) ?? [];
    const rest = links.filter((l) => l !== link);
    if (rest.length > 0) this.#byPeer.set(link.peerId, rest);
    else this.#byPeer.delete(link.peerId);
    this.#count();
    if (link.retired || rest.some((l) => l.open)) return;
    if (link.ends.outgoing && !this.#closing) {
      const failures = (this.#redial.get(link.peerId)?.failures ?? 0) + 1;
      this.#redial.set(link.peerId, { failures, at: performance.now() + equalJitterDelay(failures - 1, REDIAL_MIN_MS, REDIAL_MAX_MS) });
    }
    this.o.logger.info({ peer: link.peerId, outgoing: link.ends.outgoing, wasOpen: link.wasOpen }, 'relay link to a replica lost');
    this.o.lost(link.peerId);
  }

  #count(): void {
    let open = 0;
    for (const links of this.#byPeer.values()) for (const l of links) if (l.open) open++;
    this.#open = open;
    this.o.changed(open);
  }
}
