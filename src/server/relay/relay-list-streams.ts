import type { FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import { MEDIA, RELAY_LIST_EVENT, type RelayList } from '../../protocol/index.js';
import { chunk, LineStream, startResponse, type StreamOwner } from '../streams/index.js';
import { earliestExpiry, relayListShape } from './relay-list.js';

/** How long past a lease's expiry the list is read again: the row is gone from the live list by then. */
const EXPIRY_SLACK_MS = 50;
/** Least time between two reads: the database's clock may be behind this one's, and the lease still live there. */
const MIN_READ_SPACING_MS = 250;

export interface RelayListStreamsOptions {
  /** Reads the relay list (one query). */
  read: () => Promise<RelayList>;
  /** Opens, bounds and ends the streams (revocation, shutdown). */
  owner: StreamOwner;
  /** Longest time between two reads while streams follow (the lease renewal cadence). */
  pollMs: number;
  /** The list is sent again after this long without a change (the bookmark interval), with fresh leases. */
  heartbeatMs: number;
  /** Bytes a stream may have unsent; past it the stream is cut (its client reconnects and gets the current list). */
  bufferLimit: number;
  logger: Logger;
}

function encodeRelayList(list: RelayList): Buffer {
  return chunk(JSON.stringify({ type: RELAY_LIST_EVENT, value: list }));
}

/**
 * The `GET /api/relays?watch=true` streams of this replica: while any is
 * open, the list is read once per `pollMs` (and right after the earliest
 * lease in it expires) however many follow, and a line, encoded once, goes
 * to every stream when the replicas or their URLs changed, and again every
 * `heartbeatMs`. Each stream gets the list first when it opens.
 */
export class RelayListStreams {
  readonly #streams = new Set<LineStream>();
  #list: RelayList = { items: [] };
  #shape = relayListShape(this.#list);
  #poll: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #reading = false;
  #closed = false;

  constructor(private readonly o: RelayListStreamsOptions) {}

  get size(): number {
    return this.#streams.size;
  }

  /**
   * Turns the reply into a stream whose first line is `current` (just read
   * by the route); `tokenId` is the credential whose revocation ends it.
   * Throws 503 when the server is shutting down.
   */
  open(reply: FastifyReply, current: RelayList, tokenId: string | undefined): void {
    this.o.owner.open(reply, (socket) => {
      if (this.#closed || socket.destroyed || !socket.writable) return undefined;
      const stream = new LineStream(socket, {
        kind: 'relay_list',
        tokenId,
        bufferLimit: this.o.bufferLimit,
        logger: this.o.logger,
        onClose: (s) => {
          this.o.owner.release(s);
          if (this.#streams.delete(s) && this.#streams.size === 0) this.#stop();
        },
      });
      startResponse(socket, MEDIA.watch);
      stream.write(encodeRelayList(current));
      const first = this.#streams.size === 0;
      this.#streams.add(stream);
      this.o.owner.guard(stream);
      // A fresher read than the followers' last: a change they haven't seen yet goes to them too.
      this.#update(current, stream);
      if (first) this.#start();
      return stream;
    });
  }

  /** Stops reading (shutdown: the owner ended the streams already). */
  close(): void {
    this.#closed = true;
    this.#stop();
  }

  #start(): void {
    this.#heartbeat = setInterval(() => this.#send(encodeRelayList(this.#list)), this.o.heartbeatMs);
    this.#heartbeat.unref();
    this.#schedule();
  }

  #stop(): void {
    clearInterval(this.#heartbeat);
    clearTimeout(this.#poll);
    this.#heartbeat = undefined;
    this.#poll = undefined;
  }

  #schedule(): void {
    if (this.#closed || this.#streams.size === 0) return;
    const expiry = earliestExpiry(this.#list);
    const untilExpiry = expiry === undefined ? Number.POSITIVE_INFINITY : Math.max(MIN_READ_SPACING_MS, expiry - Date.now() + EXPIRY_SLACK_MS);
    clearTimeout(this.#poll);
    this.#poll = setTimeout(() => void this.#read(), Math.min(this.o.pollMs, untilExpiry));
    this.#poll.unref();
  }

  async #read(): Promise<void> {
    if (this.#reading) return;
    this.#reading = true;
    try {
      this.#update(await this.o.read());
    } catch (err) {
      // The streams keep the last list; the next round reads again.
      this.o.logger.warn({ err }, 'relay list read failed');
    } finally {
      this.#reading = false;
      this.#schedule();
    }
  }

  /** Keeps `list` as the current one; sends it to every stream (but `except`) when it changed. */
  #update(list: RelayList, except?: LineStream): void {
    this.#list = list;
    const shape = relayListShape(list);
    if (shape === this.#shape) return;
    this.#shape = shape;
    this.#send(encodeRelayList(list), except);
  }

  #send(line: Buffer, except?: LineStream): void {
    for (const s of this.#streams) if (s !== except) s.write(line);
  }
}
