/**
 * The server's `Retry-After` (RFC 9110 §10.2.3) on 429 and 503 answers: how
 * long to stay away. How long a retry loop then waits is the backoff's
 * (src/util/backoff.ts, `retryAfterWait`).
 */
import { FleetplaneError } from './errors.js';

// The three HTTP-date forms all start with a day name; Date.parse alone would take "1.5" for a date.
const HTTP_DATE = /^[A-Za-z]{3,9},?\s/;
const DELAY_SECONDS = /^\d+$/;

/**
 * Milliseconds a `Retry-After` value asks for: `delay-seconds` (digits
 * only) or an HTTP-date, counted from `nowMs` (0 when it is past).
 * Undefined when absent or not one of those forms.
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.trim();
  if (DELAY_SECONDS.test(v)) {
    const ms = Number(v) * 1000;
    return Number.isFinite(ms) ? ms : undefined;
  }
  if (!HTTP_DATE.test(v)) return undefined;
  // HTTP-dates are all GMT; the asctime form doesn't say so, and Date.parse would take it as local time.
  const at = Date.parse(/GMT$/i.test(v) ? v : `${v} GMT`);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** The Retry-After an error carries (see FleetplaneError.retryAfterMs); undefined for anything else. */
export function retryAfterOf(err: unknown): number | undefined {
  return err instanceof FleetplaneError ? err.retryAfterMs : undefined;
}
