/**
 * The one exponential backoff with jitter of the project (server, SDK,
 * agent, CLI, bench, dashboard). Browser-safe: no Node built-ins.
 *
 * After the n-th consecutive failure (n from 0) the ceiling is
 * min(capMs, baseMs·2^n); the delay is drawn under it:
 * - full jitter, uniform in [0, ceiling): spreads many clients' retries
 *   after an outage instead of synchronising them;
 * - equal jitter, uniform in [ceiling/2, ceiling): as spread, but never
 *   immediately (retries against a third party, a user's page).
 * A server's Retry-After is a floor under the draw (`retryAfterWait`).
 */

/** Past this the ceiling is long since capped; keeps 2^n finite. */
const MAX_EXPONENT = 40;

/** Longest Retry-After honoured: a larger value (a misconfigured proxy, a date far ahead) is taken as this, so a loop that never gives up isn't parked for hours by one answer. */
export const MAX_RETRY_AFTER_MS = 10 * 60 * 1000;

/** Largest jitter added on top of a Retry-After. */
export const MAX_RETRY_AFTER_JITTER_MS = 30_000;

/** The ceiling of the delay after the n-th consecutive failure (n from 0): min(capMs, baseMs·2^n). */
export function backoffCeiling(failures: number, baseMs: number, capMs: number): number {
  return Math.min(capMs, baseMs * 2 ** Math.min(failures, MAX_EXPONENT));
}

/** Full jitter, whole milliseconds: uniform in [0, ceiling). `random` returns values in [0, 1). */
export function fullJitterDelay(failures: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  return Math.floor(random() * backoffCeiling(failures, baseMs, capMs));
}

/** Equal jitter, whole milliseconds: uniform in [ceiling/2, ceiling). `random` returns values in [0, 1). */
export function equalJitterDelay(failures: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  const c = backoffCeiling(failures, baseMs, capMs);
  return Math.floor(c / 2 + (random() * c) / 2);
}

/**
 * How long to wait because of a Retry-After of `retryAfterMs`: at least that
 * (capped at MAX_RETRY_AFTER_MS), plus uniform jitter in
 * [0, min(retryAfter / 2, MAX_RETRY_AFTER_JITTER_MS)), so clients told the
 * same moment don't all come back at it. `random` returns values in [0, 1).
 */
export function retryAfterWait(retryAfterMs: number, random: () => number = Math.random): number {
  const floor = Math.min(Math.max(0, retryAfterMs), MAX_RETRY_AFTER_MS);
  return floor + random() * Math.min(floor / 2, MAX_RETRY_AFTER_JITTER_MS);
}

/** Reconnect timing of a retry loop. */
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

/**
 * The failures of one retry loop, counted, and the next delay drawn with
 * full jitter (not rounded to whole milliseconds).
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
    return backoffCeiling(this.#failures, this.#policy.initialMs, this.#policy.maxMs);
  }

  /**
   * Counts a failure and returns how long to wait before the next try.
   * `healthyMs`: how long the connection that just ended had been healthy
   * (0 when it never opened); at least `resetAfterMs` restarts the sequence.
   * `retryAfterMs`: the server's Retry-After for this failure; the wait is
   * then at least that plus jitter (`retryAfterWait`), and never less than
   * the backoff's own draw, so a server repeating `Retry-After: 0` still
   * meets a growing backoff.
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
