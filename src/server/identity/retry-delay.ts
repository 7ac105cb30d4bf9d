// Its own copies rather than the bus's: importing the bus module would load its Redis and PostgreSQL clients.

function ceiling(failures: number, baseMs: number, capMs: number): number {
  return Math.min(capMs, baseMs * 2 ** Math.min(failures, 30));
}

/**
 * Exponential backoff with full jitter: after the n-th consecutive failure (n from 0) a uniformly
 * random delay in [0, min(capMs, baseMs·2^n)) ms.
 */
export function fullJitterDelay(failures: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  return Math.floor(random() * ceiling(failures, baseMs, capMs));
}

/**
 * Exponential backoff with "equal" jitter: uniform in [c/2, c) for the ceiling c of full jitter.
 * For retries against a third party: spread like full jitter, but never immediately.
 */
export function equalJitterDelay(failures: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  const c = ceiling(failures, baseMs, capMs);
  return Math.floor(c / 2 + (random() * c) / 2);
}
