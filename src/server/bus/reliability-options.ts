import type { Logger } from 'pino';

/** Tuning of the reliable-delivery layer shared by the PostgreSQL and Redis buses. */
export interface ReliabilityOptions {
  /**
   * A publisher sends a hello (its id and last sequence number) when it has
   * sent nothing for this long (ms). Also the period of the listener's
   * self-check.
   */
  helloIntervalMs: number;
  /** How long a subscriber waits for a missing sequence number before waking everything (ms). */
  gapDelayMs: number;
  /**
   * A publisher not heard from for this long is forgotten (ms); hearing it
   * again counts as a new publisher. Default: 10 × helloIntervalMs.
   */
  forgetAfterMs?: number;
  /**
   * Test hook: discard every Nth signal message (hellos are never discarded),
   * before sending (`outgoing`, the number is still used up) or after
   * receiving (`incoming`). 0 or absent: discard nothing.
   */
  dropEvery?: { outgoing?: number; incoming?: number };
  logger: Logger;
}

/** Distinct names a publisher queues between two sends; beyond it they become one `all` message. */
export const MAX_PENDING_NAMES = 1024;
/** Missing sequence numbers tracked per publisher; a larger gap wakes everything at once. */
export const MAX_MISSING_PER_PUBLISHER = 1024;
/** Publishers tracked at once; beyond it the least recently heard is forgotten. */
export const MAX_PUBLISHERS = 10_000;

export function forgetAfterMs(o: ReliabilityOptions): number {
  return o.forgetAfterMs ?? 10 * o.helloIntervalMs;
}

/** How long our own confirmed messages may go unheard before the listener counts as deaf. */
export function deafAfterMs(o: ReliabilityOptions): number {
  return 3 * o.helloIntervalMs + o.gapDelayMs;
}
