/**
 * How a simulated agent waits before it reconnects, as the real one does:
 * the SDK's or the agent tunnel's backoff (src/util/backoff.ts), never
 * sooner than the server's Retry-After plus jitter.
 */
import { DEFAULT_BACKOFF, type BackoffPolicy } from '../../util/backoff.js';
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
