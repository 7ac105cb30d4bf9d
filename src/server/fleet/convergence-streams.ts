import type { FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import { MEDIA, orgSignal, PAGE_STATUS_INTERVAL_MS, statusSignal, type Convergence, type StatusesItems, type StatusSummary } from '../../protocol/index.js';
import type { SignalBus, Subscription } from '../bus/index.js';
import { ApiError } from '../errors.js';
import { chunk, LineStream, startResponse, type StreamOwner, type StreamSocket } from '../streams/index.js';
import type { FleetMetrics } from './fleet-metrics.js';
import { PageSink } from './page-sink.js';
import { encodeStatuses } from './statuses-line.js';

/** A line of a convergence stream (docs/protocol.md "Fleet convergence"), from its value's JSON text. */
function encodeConvergence(valueJson: string): Buffer {
  return chunk(`{"type":"convergence","value":${valueJson}}`);
}

/**
 * An organization's convergence for as long as it has streams here: each
 * `read` is one query (throws ApiError not_found when the organization is
 * gone); reads of one source never overlap.
 */
export interface ConvergenceSource {
  read(): Promise<Convergence>;
  /** From the next read on, also follows each device's status summary. */
  followStatuses(): void;
  /** Reads since `followStatuses`: 0 until one has read every device's summary. */
  readonly statusReads: number;
  /** Every device's summary as of the last read. */
  allStatuses(): StatusSummary[];
  /** Summaries changed and devices deleted since the last call. */
  takeStatusChanges(): StatusesItems;
}

export interface ConvergenceStreamsOptions {
  source(orgId: string): ConvergenceSource;
  bus: SignalBus;
  /** Opens, bounds and ends the streams (revocation, shutdown). */
  owner: StreamOwner;
  /** Least time between two queries (and lines) of one organization. */
  minIntervalMs: number;
  /** An unchanged value is sent again after this long, so a dead stream shows. */
  heartbeatMs: number;
  /** Bytes a stream may have unsent; past it the stream is cut (its client reconnects and gets the current value). */
  bufferLimit: number;
  metrics: FleetMetrics;
  logger: Logger;
}

interface OrgState {
  readonly streams: Set<LineStream>;
  /** Page streams following this organization's convergence or statuses (docs/protocol.md "Page stream"). */
  readonly pages: Set<PageSink>;
  readonly source: ConvergenceSource;
  readonly subscriptions: Subscription[];
  json: string;
  bytes: Buffer;
  dirty: boolean;
  timer: NodeJS.Timeout | undefined;
  reading: boolean;
  lastReadAt: number;
  /** The next `statuses` delta is due (at most one per PAGE_STATUS_INTERVAL_MS). */
  statusTimer: NodeJS.Timeout | undefined;
  lastStatusesAt: number;
  /** A `statuses` line is being packed: lines go out in order, one at a time. */
  encoding: Promise<void> | undefined;
}

/**
 * Live convergence streams (`GET .../convergence?watch=true`). Per
 * organization with streams on this replica: woken by its change signals
 * and by status batches of any replica, it reads its source (one query)
 * at most once per `minIntervalMs` however many streams follow it, and
 * writes a line (one encoding for all streams) only when the value changed.
 * The stream owner opens and ends the streams.
 */
export class ConvergenceStreams {
  readonly #orgs = new Map<string, OrgState>();
  readonly #heartbeat: NodeJS.Timeout;
  #count = 0;

  constructor(private readonly o: ConvergenceStreamsOptions) {
    this.#heartbeat = setInterval(() => this.#beat(), o.heartbeatMs);
    this.#heartbeat.unref();
  }

  /**
   * Turns the reply into a stream whose first value (`current`) the route
   * has just read; `tokenId` is the credential whose revocation ends it.
   * Throws 503 when the server is shutting down.
   */
  open(reply: FastifyReply, orgId: string, current: Convergence, tokenId: string | undefined): void {
    this.o.owner.open(reply, (socket) => {
      if (socket.destroyed || !socket.writable) return undefined;
      const state = this.#follow(orgId, JSON.stringify(current));
      const stream = new LineStream(socket, {
        kind: 'convergence',
        tokenId,
        bufferLimit: this.o.bufferLimit,
        logger: this.o.logger,
        onClose: (s) => {
          this.o.owner.release(s);
          if (!state.streams.delete(s)) return;
          this.o.metrics.convergenceStreams.set(--this.#count);
          if (state.streams.size === 0 && state.pages.size === 0) this.#drop(orgId, state);
        },
      });
      startResponse(socket, MEDIA.watch);
      stream.write(state.bytes);
      state.streams.add(stream);
      this.o.metrics.convergenceStreams.set(++this.#count);
      this.o.owner.guard(stream);
      return stream;
    });
  }

  /**
   * Adds a page stream's convergence and statuses (as asked) to its watch
   * stream's socket, until the socket closes. The convergence goes at once
   * when the organization is followed already, else after its first read.
   */
  attachPage(socket: StreamSocket, orgId: string, wants: { convergence: boolean; statuses: boolean }): void {
    if (!wants.convergence && !wants.statuses) return;
    const state = this.#follow(orgId, 'null');
    const sink: PageSink = new PageSink(socket, wants.convergence, wants.statuses, {
      convergence: () => (state.json === 'null' ? undefined : state.bytes),
      resetStatuses: () => this.#resetStatuses(orgId, state),
    });
    state.pages.add(sink);
    this.o.metrics.pageStreams.inc();
    this.o.metrics.pageStreamsOpened.inc();
    socket.once('close', () => {
      this.o.metrics.pageStreams.dec();
      if (!state.pages.delete(sink)) return;
      if (state.streams.size === 0 && state.pages.size === 0) this.#drop(orgId, state);
    });
    if (wants.convergence) {
      if (state.json !== 'null') sink.writeConvergence(state.bytes);
      // Not read yet (the page came first): the first read writes it.
      else this.#wake(orgId);
    }
    if (wants.statuses) {
      state.source.followStatuses();
      if (state.source.statusReads > 0) this.#resetStatuses(orgId, state);
      else this.#wake(orgId);
    }
  }

  /** Sends every device's summary to the sinks still waiting for it; one encoding for all of them. */
  #resetStatuses(orgId: string, org: OrgState): void {
    this.#queueStatuses(org, async () => {
      const waiting = [...org.pages].filter((p) => p.needsStatusesReset && !p.closed);
      if (waiting.length === 0 || org.source.statusReads === 0) return;
      const bytes = await encodeStatuses(true, { items: org.source.allStatuses(), removed: [] });
      for (const p of waiting) p.writeStatusesReset(bytes);
    }, orgId);
  }

  /** The changes since the last delta, to every sink past its reset; at most one per PAGE_STATUS_INTERVAL_MS. */
  #scheduleStatuses(orgId: string, org: OrgState): void {
    if (org.statusTimer) return;
    const wait = Math.max(0, org.lastStatusesAt + PAGE_STATUS_INTERVAL_MS - performance.now());
    org.statusTimer = setTimeout(() => {
      org.statusTimer = undefined;
      org.lastStatusesAt = performance.now();
      this.#queueStatuses(org, async () => {
        const changes = org.source.takeStatusChanges();
        if (changes.items.length === 0 && changes.removed.length === 0) return;
        const bytes = await encodeStatuses(false, changes);
        for (const p of org.pages) p.writeStatusesDelta(bytes);
      }, orgId);
    }, wait);
  }

  /** Runs `write` after the organization's previous statuses line went out: a reset packed later than a delta must not overtake it. */
  #queueStatuses(org: OrgState, write: () => Promise<void>, orgId: string): void {
    const run = (): Promise<void> =>
      write().catch((err: unknown) => {
        // The sinks keep what they had; a reset on the next page joining or drain mends them.
        this.o.logger.error({ err, org: orgId }, 'statuses line failed');
      });
    const next: Promise<void> = (org.encoding ?? Promise.resolve()).then(run).finally(() => {
      if (org.encoding === next) org.encoding = undefined;
    });
    org.encoding = next;
  }

  /** The organization's state, followed from now if it wasn't; a stream joining a followed one gets the value its peers have, which its own read may postdate. */
  #follow(orgId: string, json: string): OrgState {
    let org = this.#orgs.get(orgId);
    if (!org) {
      const wake = (): void => this.#wake(orgId);
      org = {
        streams: new Set(),
        pages: new Set(),
        source: this.o.source(orgId),
        subscriptions: [this.o.bus.subscribe(orgSignal(orgId), wake), this.o.bus.subscribe(statusSignal(orgId), wake)],
        json,
        bytes: encodeConvergence(json),
        dirty: false,
        timer: undefined,
        reading: false,
        lastReadAt: performance.now(),
        statusTimer: undefined,
        lastStatusesAt: Number.NEGATIVE_INFINITY,
        encoding: undefined,
      };
      this.#orgs.set(orgId, org);
    } else if (org.json === 'null' && json !== 'null') {
      // Followed by page streams only, not read yet: a convergence stream's route read it first.
      org.json = json;
      org.bytes = encodeConvergence(json);
      for (const p of org.pages) p.writeConvergence(org.bytes);
    }
    return org;
  }

  /** Stops following (shutdown: the owner ended the streams already). */
  close(): void {
    clearInterval(this.#heartbeat);
    for (const [orgId, org] of [...this.#orgs]) this.#drop(orgId, org);
  }

  #wake(orgId: string): void {
    const org = this.#orgs.get(orgId);
    if (!org) return;
    org.dirty = true;
    if (org.timer || org.reading) return;
    const wait = Math.max(0, org.lastReadAt + this.o.minIntervalMs - performance.now());
    org.timer = setTimeout(() => {
      org.timer = undefined;
      void this.#read(orgId, org);
    }, wait);
  }

  async #read(orgId: string, org: OrgState): Promise<void> {
    org.reading = true;
    org.dirty = false;
    org.lastReadAt = performance.now();
    this.o.metrics.convergenceQueries.inc();
    try {
      const value = await org.source.read();
      const json = JSON.stringify(value);
      if (json !== org.json && this.#orgs.get(orgId) === org) {
        org.json = json;
        org.bytes = encodeConvergence(json);
        for (const s of org.streams) s.write(org.bytes);
        for (const p of org.pages) p.writeConvergence(org.bytes);
      }
      if (this.#orgs.get(orgId) === org) {
        let statuses = false;
        let reset = false;
        for (const p of org.pages) {
          statuses ||= p.statuses;
          reset ||= p.needsStatusesReset;
        }
        if (reset) this.#resetStatuses(orgId, org);
        if (statuses) this.#scheduleStatuses(orgId, org);
      }
    } catch (err) {
      if (err instanceof ApiError && err.code === 'not_found') {
        for (const s of [...org.streams]) s.end({ cause: 'gone', code: err.code, message: err.message });
        // A page stream's watch part ends itself with the organization's delete event.
      } else {
        // The next signal or heartbeat reads again; the streams keep their last value meanwhile.
        this.o.logger.warn({ err, org: orgId }, 'convergence query failed');
        org.dirty = true;
      }
    } finally {
      org.reading = false;
      if (org.dirty && this.#orgs.get(orgId) === org) this.#wake(orgId);
    }
  }

  #beat(): void {
    for (const org of this.#orgs.values()) for (const s of org.streams) s.write(org.bytes);
  }

  #drop(orgId: string, org: OrgState): void {
    clearTimeout(org.timer);
    clearTimeout(org.statusTimer);
    for (const sub of org.subscriptions) sub.close();
    if (this.#orgs.get(orgId) === org) this.#orgs.delete(orgId);
  }
}
