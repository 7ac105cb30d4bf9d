/** Past this the ceiling is long since capped; keeps 2^n finite. */
const MAX_EXPONENT = 30;

/** The ceiling of the delay after the n-th consecutive failure (n from 0): min(capMs, baseMs·2^n). */
function ceiling(failures: number, baseMs: number, capMs: number): number {
  return Math.min(capMs, baseMs * 2 ** Math.min(failures, MAX_EXPONENT));
}

/**
 * Exponential backoff with full jitter: after the n-th consecutive failure (n from 0) a uniformly
 * random delay in [0, min(capMs, baseMs·2^n)) ms. Spreads many clients' retries after an outage
 * instead of synchronising them.
 */
export function fullJitterDelay(failures: number, baseMs: number, capMs: number): number {
  return Math.floor(Math.random() * ceiling(failures, baseMs, capMs));
}

/**
 * Exponential backoff with "equal" jitter: uniform in [c/2, c) for the ceiling c of full jitter.
 * For retries against a third party: spread like full jitter, but never immediately.
 */
export function equalJitterDelay(failures: number, baseMs: number, capMs: number): number {
  const c = ceiling(failures, baseMs, capMs);
  return Math.floor(c / 2 + (Math.random() * c) / 2);
}
