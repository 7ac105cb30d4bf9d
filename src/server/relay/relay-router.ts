import type { Logger } from 'pino';
import { RELAY_KEY_BYTES, RELAY_LINK_BUFFER_BYTES, RELAY_ORG_ID_BYTES } from '../../protocol/index.js';
import { countRecords, LINK_DELIVERY_OFFSET, LINK_HEADER_BYTES, orgIdAt, packetBytes, sessionId } from './relay-frames.js';
import type { RelayLocations } from './relay-locations.js';
import type { RelayLinks } from './relay-links.js';
import type { RelayMetrics } from './relay-metrics.js';
import type { RelaySession } from './relay-session.js';
import type { SessionTable } from './session-table.js';

/** Messages one destination may have waiting for its lookup; more are dropped. */
const MAX_WAITING_PER_KEY = 32;
/** Bytes all destinations together may have waiting for their lookups; more are dropped. */
const MAX_WAITING_BYTES = RELAY_LINK_BUFFER_BYTES;
/** Least time between two log lines about failed lookups. */
const LOOKUP_WARN_SPACING_MS = 10_000;

/** Where messages for other replicas go: the locations of their sessions, and the links to them. */
export interface RelayRemote {
  locations: RelayLocations;
  links: RelayLinks;
}

interface Waiting {
  readonly messages: { message: Buffer; packets: number; bytes: number }[];
  bytes: number;
}

/**
 * Routes relayed messages (docs/protocol.md "Relays"). From a device: to the
 * session of the same organization holding the destination key here (the
 * message's key rewritten in place to the sender's: no copy), else to the
 * replicas holding it (one link message, written to each), else counted
 * `no_session`. From a link: only to a session here, never further. A
 * destination whose location is being looked up holds what is sent to it
 * meanwhile, within bounds; past them, and wherever a session or a link is
 * full, packets are dropped and counted. Malformed messages are dropped
 * whole and counted apart.
 */
export class RelayRouter {
  readonly #waiting = new Map<string, Waiting>();
  #waitingBytes = 0;
  #lastLookupWarn = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly sessions: SessionTable,
    private readonly metrics: RelayMetrics,
    private readonly logger: Logger,
    /** Undefined in one process: every session is in `sessions`. */
    private readonly remote: RelayRemote | undefined,
  ) {}

  /** A device's message (`dst_key | record+`); the buffer is the router's to rewrite. */
  fromSession(from: RelaySession, message: Buffer): void {
    const packets = countRecords(message, RELAY_KEY_BYTES);
    if (packets === 0) {
      this.metrics.malformed.inc();
      return;
    }
    const bytes = packetBytes(message, RELAY_KEY_BYTES, packets);
    const id = sessionId(from.orgId, message.toString('base64', 0, RELAY_KEY_BYTES));
    const local = this.sessions.get(id);
    if (local) {
      from.device.keyBytes.copy(message, 0);
      this.#deliver(local, message, packets, bytes);
      return;
    }
    if (!this.remote) {
      this.metrics.count('no_session', packets, bytes);
      return;
    }
    const out = Buffer.allocUnsafe(LINK_HEADER_BYTES + message.length - RELAY_KEY_BYTES);
    from.device.orgBytes.copy(out, 0);
    message.copy(out, RELAY_ORG_ID_BYTES, 0, RELAY_KEY_BYTES);
    from.device.keyBytes.copy(out, LINK_DELIVERY_OFFSET);
    message.copy(out, LINK_HEADER_BYTES, RELAY_KEY_BYTES);
    this.#forward(id, out, packets, bytes);
  }

  /** Another replica's link message (`org_id | dst_key | src_key | record+`): delivered here or counted, never forwarded. */
  fromLink(message: Buffer): void {
    const packets = countRecords(message, LINK_HEADER_BYTES);
    if (packets === 0) {
      this.metrics.malformed.inc();
      return;
    }
    const bytes = packetBytes(message, LINK_HEADER_BYTES, packets);
    const id = sessionId(orgIdAt(message, 0), message.toString('base64', RELAY_ORG_ID_BYTES, LINK_DELIVERY_OFFSET));
    const local = this.sessions.get(id);
    if (local) this.#deliver(local, message.subarray(LINK_DELIVERY_OFFSET), packets, bytes);
    else this.metrics.count('no_session', packets, bytes);
  }

  /** Messages waiting for lookups (for tests and diagnostics). */
  get waitingBytes(): number {
    return this.#waitingBytes;
  }

  #deliver(to: RelaySession, message: Buffer, packets: number, bytes: number): void {
    this.metrics.count(to.send(message) ? 'delivered' : 'dropped', packets, bytes);
  }

  #forward(id: string, message: Buffer, packets: number, bytes: number): void {
    const remote = this.remote;
    if (!remote) return;
    const holders = remote.locations.cached(id);
    if (holders) {
      this.#sendTo(remote, holders, message, packets, bytes);
      return;
    }
    let waiting = this.#waiting.get(id);
    if (waiting && (waiting.messages.length >= MAX_WAITING_PER_KEY || this.#waitingBytes + message.length > MAX_WAITING_BYTES)) {
      this.metrics.count('dropped', packets, bytes);
      return;
    }
    if (!waiting) {
      if (this.#waitingBytes + message.length > MAX_WAITING_BYTES) {
        this.metrics.count('dropped', packets, bytes);
        return;
      }
      waiting = { messages: [], bytes: 0 };
      this.#waiting.set(id, waiting);
      const mine = waiting;
      remote.locations.lookup(id).then(
        (found) => this.#flush(id, mine, (m) => this.#sendTo(remote, found, m.message, m.packets, m.bytes)),
        (err: unknown) => {
          const now = performance.now();
          if (now - this.#lastLookupWarn > LOOKUP_WARN_SPACING_MS) {
            this.#lastLookupWarn = now;
            this.logger.warn({ err }, 'relay registry lookup failed; packets for other replicas are dropped meanwhile');
          }
          this.#flush(id, mine, (m) => this.metrics.count('dropped', m.packets, m.bytes));
        },
      );
    }
    waiting.messages.push({ message, packets, bytes });
    waiting.bytes += message.length;
    this.#waitingBytes += message.length;
  }

  #flush(id: string, waiting: Waiting, each: (m: Waiting['messages'][number]) => void): void {
    if (this.#waiting.get(id) === waiting) this.#waiting.delete(id);
    this.#waitingBytes -= waiting.bytes;
    for (const m of waiting.messages) each(m);
  }

  #sendTo(remote: RelayRemote, holders: readonly string[], message: Buffer, packets: number, bytes: number): void {
    if (holders.length === 0) {
      this.metrics.count('no_session', packets, bytes);
      return;
    }
    // Several holders only while a device moves between replicas: each gets it (WireGuard drops a duplicate).
    for (const replica of holders) remote.links.send(replica, message, packets, bytes);
  }
}
