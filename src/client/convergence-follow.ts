import type { Convergence } from '../protocol/wire.js';
import { Backoff, type BackoffPolicy } from '../util/backoff.js';
import { watchConvergence } from './convergence-watch.js';
import { isRetryable } from './error-mapping.js';
import { TransportError } from './errors.js';
import type { HttpTransport } from './http-transport.js';
import { consoleLogger, type InformerLogger } from './logger.js';
import { retryAfterOf } from './retry-after.js';
import { DEFAULT_BOOKMARK_INTERVAL_MS } from './shared-informers.js';
import { sleep } from '../util/sleep.js';

/** A failed convergence connection and the wait before the next one. */
export interface ConvergenceRetry {
  error: Error;
  /** Consecutive failures, from 1. */
  attempt: number;
  delayMs: number;
}

export interface FollowConvergenceOptions {
  /** Aborting ends the iteration normally; it is the only way to stop it but breaking out of the loop. */
  signal: AbortSignal;
  /** The server's bookmark interval; 3 × this without a line means the stream is dead. Default 15 s. */
  bookmarkIntervalMs?: number | undefined;
  /** Reconnect timing (full jitter); default 0.5 s doubling to 8 s, reset after a healthy minute. */
  backoff?: Partial<BackoffPolicy> | undefined;
  /** Source of jitter in [0, 1). */
  random?: (() => number) | undefined;
  /** Milliseconds clock (for the healthy-minute reset). */
  now?: (() => number) | undefined;
  /** Bound of one line (default 16 MiB). */
  maxLineBytes?: number | undefined;
  /** Told of every retryable failure before the wait. Without it, failures are logged as warnings. */
  onRetry?: ((retry: ConvergenceRetry) => void) | undefined;
  /** Where failures go without `onRetry` (pino-compatible). Defaults to console. */
  logger?: InformerLogger | undefined;
}

function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * The organization's convergence, followed across disconnects: like
 * `watchConvergence`, but any retryable failure (a broken or idle
 * connection, a server shutting down, 429/503, an unparsable line, an end
 * without an error line) reconnects after an exponential backoff with full
 * jitter, and never sooner than the server's Retry-After plus jitter. After
 * a reconnect the current value comes again, unchanged or not.
 *
 * Ends normally when `signal` aborts; throws (and stops) only on what
 * retrying can't fix: AuthError (401/403, a revoked token) and NotFoundError
 * (404, the organization is gone).
 */
export async function* followConvergence(
  transport: HttpTransport,
  org: string,
  opts: FollowConvergenceOptions,
): AsyncGenerator<Convergence, void, undefined> {
  const { signal } = opts;
  const backoff = new Backoff(opts.backoff, opts.random);
  const now = opts.now ?? Date.now;
  const logger = opts.logger ?? consoleLogger;
  const idleTimeoutMs = 3 * (opts.bookmarkIntervalMs ?? DEFAULT_BOOKMARK_INTERVAL_MS);
  while (!signal.aborted) {
    let openedAt: number | undefined;
    let failure: unknown;
    try {
      const values = watchConvergence(transport, org, {
        signal,
        idleTimeoutMs,
        maxLineBytes: opts.maxLineBytes,
        onOpen: () => (openedAt = now()),
      });
      for await (const value of values) yield value;
      failure = new TransportError({ code: 'network_error', message: 'the server ended the convergence stream' });
    } catch (err) {
      failure = err;
    }
    if (signal.aborted) return;
    const error = toError(failure);
    if (!isRetryable(error)) throw error;
    const delayMs = backoff.next(openedAt === undefined ? 0 : now() - openedAt, retryAfterOf(error));
    const retry: ConvergenceRetry = { error, attempt: backoff.failures, delayMs };
    if (opts.onRetry) {
      try {
        opts.onRetry(retry);
      } catch (err) {
        logger.error({ err }, 'fleetplane convergence stream: the onRetry handler threw');
      }
    } else logger.warn({ err: error, attempt: retry.attempt, delayMs: Math.round(delayMs) }, `fleetplane convergence stream: ${error.message}; reconnecting`);
    await sleep(delayMs, signal);
  }
}
