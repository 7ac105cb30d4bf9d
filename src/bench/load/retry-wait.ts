import { Backoff, DEFAULT_BACKOFF, type BackoffPolicy } from '../../client/backoff.js';
import { TUNNEL_BACKOFF as AGENT_TUNNEL_BACKOFF } from '../../agent/tunnel/tunnel-client.js';

/** Largest Retry-After a simulated agent honours (a bench must stay bounded). */
const MAX_RETRY_AFTER_MS = 60_000;

/** The watch stream's reconnect policy: the SDK's (informers). */
export const WATCH_BACKOFF: Partial<BackoffPolicy> = DEFAULT_BACKOFF;

/** The agent tunnel's reconnect policy: the agent's own. */
export const TUNNEL_BACKOFF: Partial<BackoffPolicy> = AGENT_TUNNEL_BACKOFF;

/** Milliseconds of a `Retry-After: <delay-seconds>` value; undefined when absent or another form. */
export function retryAfterMs(value: string | string[] | undefined): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || !/^\s*\d+\s*$/.test(v)) return undefined;
  return Math.min(Number(v) * 1000, MAX_RETRY_AFTER_MS);
}

/**
 * A simulated agent's wait before reconnecting: the backoff's draw (full
 * jitter), or, when the server answered with a Retry-After, that many
 * seconds plus jitter in [0, Retry-After / 2) — whichever is longer, as the
 * SDK does.
 */
export class RetryWait {
  readonly #backoff: Backoff;

  constructor(policy: Partial<BackoffPolicy>) {
    this.#backoff = new Backoff(policy);
  }

  /** `healthyMs`: how long the connection that just ended had been open (0 if it never opened). */
  next(healthyMs: number, retryAfter?: number): number {
    const drawn = this.#backoff.next(healthyMs);
    if (retryAfter === undefined) return drawn;
    return Math.max(drawn, retryAfter + Math.random() * (retryAfter / 2));
  }

  reset(): void {
    this.#backoff.reset();
  }
}
