import type { StreamSocket } from '../streams/index.js';

/** Bytes a page stream's socket may hold unsent before its convergence and statuses lines wait for it to drain. */
export const PAGE_SINK_HIGH_WATER = 256 * 1024;

/** What a page sink is sent when its socket drains after a line had to wait. */
export interface PageSinkSource {
  /** The organization's current convergence line; undefined before its first read (the read sends it). */
  convergence(): Buffer | undefined;
  /** Asks for a `statuses` reset for this sink (it held back a delta, so it must be sent everything again). */
  resetStatuses(sink: PageSink): void;
}

/**
 * The convergence and statuses a page stream carries besides its watch
 * events, written to the watch stream's own socket between its chunks. It
 * never cuts the stream and never queues more than one line past
 * PAGE_SINK_HIGH_WATER: the watcher owns the stream's pace (its list may
 * fill the socket for a while). A convergence line that finds the socket
 * full is owed, and the current one goes on drain; a statuses delta that
 * finds it full is dropped and the sink gets a reset on drain, so what
 * waits is two flags, whatever the organization's size.
 */
export class PageSink {
  #owesConvergence = false;
  #owesStatuses = false;
  #waiting = false;
  /** Set until the sink got its first statuses reset: deltas before it mean nothing to its client. */
  needsStatusesReset: boolean;

  constructor(
    private readonly socket: StreamSocket,
    readonly convergence: boolean,
    readonly statuses: boolean,
    private readonly source: PageSinkSource,
  ) {
    this.needsStatusesReset = statuses;
  }

  get closed(): boolean {
    return this.socket.destroyed || this.socket.writableEnded;
  }

  writeConvergence(bytes: Buffer): void {
    if (!this.convergence || this.closed) return;
    if (this.#full()) this.#owesConvergence = true;
    else this.socket.write(bytes);
  }

  /** A delta: dropped for a reset later when the socket is full, or while the first reset is still due. */
  writeStatusesDelta(bytes: Buffer): void {
    if (!this.statuses || this.closed || this.needsStatusesReset) return;
    if (this.#full()) this.#owesStatuses = true;
    else this.socket.write(bytes);
  }

  writeStatusesReset(bytes: Buffer): void {
    if (!this.statuses || this.closed) return;
    if (this.#full()) {
      this.#owesStatuses = true;
      return;
    }
    this.needsStatusesReset = false;
    this.socket.write(bytes);
  }

  #full(): boolean {
    if (this.socket.writableLength <= PAGE_SINK_HIGH_WATER) return false;
    if (!this.#waiting) {
      this.#waiting = true;
      this.socket.once('drain', () => this.#drained());
    }
    return true;
  }

  #drained(): void {
    this.#waiting = false;
    if (this.closed) return;
    if (this.#owesConvergence) {
      this.#owesConvergence = false;
      const line = this.source.convergence();
      if (line) this.writeConvergence(line);
    }
    if (this.#owesStatuses) {
      this.#owesStatuses = false;
      this.needsStatusesReset = true;
      this.source.resetStatuses(this);
    }
  }
}
