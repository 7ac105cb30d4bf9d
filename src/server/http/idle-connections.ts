import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { ListenerName } from './connection-limits.js';

/**
 * One open connection, as the connection limiter counts it. On a listener
 * whose idle connections make room for new ones (`evictable`), it also says
 * whether a request is being served on it: the limiter may close it only
 * while none is.
 */
export class TrackedConnection {
  /** Requests whose headers arrived and whose response has not ended yet. */
  inFlight = 0;
  /** The request whose body was still arriving when its headers were complete, until its response ends. */
  arriving: IncomingMessage | undefined;
  /** Handed to an `upgrade` listener (a WebSocket): served for as long as it lives. */
  upgraded = false;
  /** The headers of at least one request arrived on it. */
  requested = false;
  /** In the idle sets (IdleConnections). */
  listed = false;
  /** Counted out (closed, or closed to make room). */
  released = false;

  constructor(
    readonly socket: Socket,
    readonly listener: ListenerName,
    /** Its address, when its listener counts per source. */
    readonly source: string | undefined,
    readonly evictable: boolean,
    /** On plain HTTP a refusal can be written to it; with TLS it would cost a handshake. */
    readonly answerable: boolean,
  ) {}

  /**
   * No request is being served on it: it waits for its first request, for
   * the rest of a request's headers or body, or for the next request of a
   * kept-alive connection. Nothing it sent was acted on yet, or everything
   * was answered.
   */
  get idle(): boolean {
    if (this.upgraded || this.released) return false;
    const receiving = this.arriving !== undefined && !this.arriving.complete ? 1 : 0;
    return this.inFlight === receiving;
  }
}

/**
 * The idle connections of evictable listeners, longest idle first, in all
 * and by source address: where a connection limit takes the one it closes
 * to make room. A connection is put last when it becomes idle (at accept,
 * and when its last response ends) and taken out when a request is served
 * on it; a body that finished arriving without an event is noticed when
 * its connection comes first (`oldest`).
 */
export class IdleConnections {
  readonly #all = new Set<TrackedConnection>();
  readonly #bySource = new Map<string, Set<TrackedConnection>>();

  /** Lists or unlists `c` after its state changed. */
  update(c: TrackedConnection): void {
    const idle = c.evictable && c.idle;
    if (idle === c.listed) return;
    if (idle) this.#add(c);
    else this.remove(c);
  }

  remove(c: TrackedConnection): void {
    if (!c.listed) return;
    c.listed = false;
    this.#all.delete(c);
    if (c.source === undefined) return;
    const set = this.#bySource.get(c.source);
    set?.delete(c);
    if (set?.size === 0) this.#bySource.delete(c.source);
  }

  /** The connection idle the longest, of `source` when given. */
  oldest(source?: string): TrackedConnection | undefined {
    const set = source === undefined ? this.#all : this.#bySource.get(source);
    if (set === undefined) return undefined;
    // Deleting the entry being visited is safe in a Set's iteration.
    for (const c of set) {
      if (c.idle) return c;
      this.remove(c);
    }
    return undefined;
  }

  #add(c: TrackedConnection): void {
    c.listed = true;
    this.#all.add(c);
    if (c.source === undefined) return;
    let set = this.#bySource.get(c.source);
    if (set === undefined) {
      set = new Set();
      this.#bySource.set(c.source, set);
    }
    set.add(c);
  }
}
