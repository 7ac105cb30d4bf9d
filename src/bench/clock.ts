/**
 * Wall-clock milliseconds with sub-millisecond precision, comparable across
 * processes on one machine (process.hrtime is per process). Workers' clocks
 * are additionally calibrated against the harness (see load/pool.ts).
 */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}
