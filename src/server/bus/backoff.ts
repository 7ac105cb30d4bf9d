/**
 * Exponential backoff with full jitter: a uniformly random delay in
 * [0, min(capMs, baseMs * 2^attempt)) ms. `attempt` starts at 0.
 */
export function fullJitterDelay(attempt: number, baseMs: number, capMs: number): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.floor(Math.random() * ceiling);
}
