import type { TunnelStatusAck } from '../../protocol/index.js';

/**
 * What became of a status frame sent over the tunnel:
 * - `acked`: the server committed it (its `status_ack` came without error).
 * - `sent`: it went on a connection whose server has acked one before, as a
 *   frame answered only if it can't be recorded (`ack: "errors"`); such an
 *   answer comes later, to the tunnel's `onStatusRejected` listeners.
 * - `rejected`: the server answered with an error (`not_found`: the device
 *   is gone; `unavailable`: it couldn't record it now; `validation_failed`).
 * - `timeout`: no answer in time (a server that doesn't know status frames,
 *   or one that is stuck).
 * - `not_connected`: no open connection to send it on, or the connection
 *   closed before the answer came.
 */
export type StatusSendOutcome =
  | { readonly type: 'acked' }
  | { readonly type: 'sent' }
  | { readonly type: 'rejected'; readonly code: string; readonly message: string }
  | { readonly type: 'timeout' }
  | { readonly type: 'not_connected' };

/** Most status frames of one connection waiting for their ack; beyond it the oldest counts as timed out. */
export const MAX_PENDING_STATUS_ACKS = 64;

interface Waiter {
  settle: (outcome: StatusSendOutcome) => void;
}

/**
 * The status frames of one tunnel connection waiting for their `status_ack`,
 * by `seq`. Each waiter ends exactly once: with the ack, at its timeout, when
 * its signal aborts (rejecting with the signal's reason), or `not_connected`
 * when the connection closes. At most MAX_PENDING_STATUS_ACKS wait at once.
 */
export class StatusAcks {
  readonly #waiting = new Map<number, Waiter>();
  #closed = false;

  /** Frames waiting for their ack. */
  get size(): number {
    return this.#waiting.size;
  }

  /**
   * Waits for the ack of `seq` (register before sending the frame, so an
   * immediate ack isn't missed).
   */
  wait(seq: number, timeoutMs: number, signal?: AbortSignal): Promise<StatusSendOutcome> {
    if (this.#closed) return Promise.resolve({ type: 'not_connected' });
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#waiting.size >= MAX_PENDING_STATUS_ACKS) {
      const oldest = this.#waiting.keys().next();
      if (!oldest.done) this.#settle(oldest.value, { type: 'timeout' });
    }
    return new Promise((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#waiting.delete(seq);
      };
      const onAbort = (): void => {
        done();
        reject(signal?.reason);
      };
      const timer = setTimeout(() => this.#settle(seq, { type: 'timeout' }), Math.max(0, timeoutMs));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.set(seq, {
        settle: (outcome) => {
          done();
          resolve(outcome);
        },
      });
    });
  }

  /** Ends the waiter of `ack.seq`; false when nobody waits for it (it timed out, or the server made it up). */
  settle(ack: TunnelStatusAck): boolean {
    return this.#settle(
      ack.seq,
      ack.error === undefined ? { type: 'acked' } : { type: 'rejected', code: ack.error.code, message: ack.error.message },
    );
  }

  /** The connection closed: every waiter ends `not_connected`, and so does any later `wait`. */
  close(): void {
    this.#closed = true;
    for (const seq of [...this.#waiting.keys()]) this.#settle(seq, { type: 'not_connected' });
  }

  #settle(seq: number, outcome: StatusSendOutcome): boolean {
    const waiter = this.#waiting.get(seq);
    if (!waiter) return false;
    waiter.settle(outcome);
    return true;
  }
}
