import type { ErrorCode } from './errors.js';
import type { Convergence } from './schemas/fleet.js';

/**
 * One line of `GET .../convergence?watch=true` (`application/json;stream=watch`):
 * `convergence` carries the whole current value (first at once, then on
 * every change, at most one per CONVERGENCE_MIN_INTERVAL_MS, and again after
 * each bookmark interval without change, so a dead stream shows); `error` is
 * the last line.
 */
export type ConvergenceEvent =
  | { type: 'convergence'; value: Convergence }
  | { type: 'error'; value: { code: ErrorCode; message: string } };

/** Least time between two `convergence` lines of one stream. */
export const CONVERGENCE_MIN_INTERVAL_MS = 100;
