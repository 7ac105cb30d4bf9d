import { retryAfterWait } from './retry-after.js';

/** Reconnect timing of informers. */
export interface BackoffPolicy {
  /** Ceiling of the first delay. */
  initialMs: number;
  /** Largest ceiling. */
  maxMs: number;
  /** A connection healthy at least this long resets the sequence. */
  resetAfterMs: number;
}

/**
 * 0.5 s doubling to 8 s. The ceiling is low on purpose: after a server
 * restart of a few seconds, a fleet whose retries grew to 30 s would still be
 * trickling back half a minute later; an overloaded server says so with
 * 503 + Retry-After (which the wait honours) instead of relying on clients
 * backing off far.
 */
export const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 500, maxMs: 8_000, resetAfterMs: 60_000 };

/** Past this the ceiling is long since capped; keeps 2^n finite. */
const MAX_EXPONENT = 40;

/**
 * Exponential backoff with full jitter: after the n-th consecutive failure
 * (n from 0) the delay is uniform in [0, min(maxMs, initialMs·2^n)).
 * Full jitter spreads a fleet's reconnects after a server restart instead of
 * synchronising them.
 */
export class Backoff {
  readonly #policy: BackoffPolicy;
  readonly #random: () => number;
  #failures = 0;

  constructor(policy: Partial<BackoffPolicy> = {}, random: () => number = Math.random) {
    this.#policy = { ...DEFAULT_BACKOFF, ...policy };
    this.#random = random;
  }

  /** Consecutive failures counted so far (the `attempt` informers report). */
  get failures(): number {
    return this.#failures;
  }

  /** The ceiling the next delay is drawn under. */
  ceiling(): number {
    const { initialMs, maxMs } = this.#policy;
    return Math.min(maxMs, initialMs * 2 ** Math.min(this.#failures, MAX_EXPONENT));
  }

  /**
   * Counts a failure and returns how long to wait before the next try.
   * `healthyMs`: how long the connection that just ended had been healthy
   * (0 when it never opened); at least `resetAfterMs` restarts the sequence.
   * `retryAfterMs`: the server's Retry-After for this failure (see
   * `retryAfterOf`); the wait is then at least that plus jitter
   * (`retryAfterWait`), and never less than the backoff's own draw, so a
   * server repeating `Retry-After: 0` still meets a growing backoff.
   */
  next(healthyMs = 0, retryAfterMs?: number): number {
    if (healthyMs >= this.#policy.resetAfterMs) this.#failures = 0;
    const delay = this.#random() * this.ceiling();
    this.#failures += 1;
    if (retryAfterMs === undefined) return delay;
    return Math.max(delay, retryAfterWait(retryAfterMs, this.#random));
  }

  reset(): void {
    this.#failures = 0;
  }
}
