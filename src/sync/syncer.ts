import type { Logger } from 'pino';
import {
  ConflictError,
  FleetplaneError,
  ServerError,
  TransportError,
  UnavailableError,
  ValidationError,
  type PolicyApi,
} from '../client/index.js';
import type { SyncErrorReason, SyncResult } from '../protocol/index.js';
import { Backoff, type BackoffPolicy } from '../util/backoff.js';
import { sleep } from '../util/sleep.js';
import { SourceError, type PolicySource } from './source.js';
import type { SyncMetrics } from './sync-metrics.js';

/** The policy calls the syncer makes (FleetplaneClient's `policy`). */
export type PolicyClient = Pick<PolicyApi, 'get' | 'apply'>;

export interface SyncerOptions {
  client: PolicyClient;
  /** The organization's id (a name is resolved here, once it succeeds); a rejection counts as a server failure. */
  org: (signal: AbortSignal) => Promise<string>;
  source: PolicySource;
  intervalMs: number;
  metrics: SyncMetrics;
  logger: Logger;
  /** Retries of failures that may pass by themselves (network, 5xx, a write in between); the ceiling never exceeds `intervalMs`. Default 1 s doubling. */
  backoff?: Partial<BackoffPolicy>;
  now?: () => number;
}

/** A sync's result, and whether to try again before the interval is over. */
interface Outcome {
  result: SyncResult;
  retry: boolean;
  retryAfterMs: number | undefined;
}

/** Why an error from the server failed the sync, and whether trying again soon may succeed. */
function classify(err: unknown): { reason: SyncErrorReason; retryable: boolean } {
  if (err instanceof ValidationError && err.code === 'policy_invalid') return { reason: 'invalid', retryable: false };
  if (err instanceof ValidationError && err.code === 'policy_test_failed') return { reason: 'tests', retryable: false };
  // 409 conflict: the document drops a group devices name by id; the document has to change, as for a 400.
  if (err instanceof ConflictError && err.code === 'conflict') return { reason: 'invalid', retryable: false };
  // 412: the document changed between the read and the write; the next read sees it.
  if (err instanceof ConflictError && err.code === 'precondition_failed') return { reason: 'server', retryable: true };
  const retryable = err instanceof TransportError || err instanceof UnavailableError || err instanceof ServerError;
  return { reason: 'server', retryable };
}

function errorFields(err: unknown): { message: string; code?: string; details?: Record<string, unknown> } {
  if (err instanceof FleetplaneError) return { message: err.message, code: err.code, ...(err.details ? { details: err.details } : {}) };
  return { message: err instanceof Error ? err.message : String(err) };
}

/**
 * Keeps an organization's policy document equal to a source. A sync reads
 * the source and the server's document, and PUTs the source (If-Match the
 * ETag just read) only when its text differs, or when no document manages
 * the organization yet. A failure changes nothing on the server: it keeps
 * the last document that applied. Failures are logged, counted by reason,
 * and the loop goes on. Syncs never overlap: one asked for while another
 * runs starts after it.
 */
export class PolicySyncer {
  readonly #o: SyncerOptions;
  readonly #now: () => number;
  #chain: Promise<unknown> = Promise.resolve();
  #revision: number | null = null;
  /** Wakes the loop's wait when a forced sync ends. */
  #wake: AbortController | undefined;
  #forced: Outcome | undefined;

  constructor(options: SyncerOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** The organization revision the last successful PUT of this syncer answered; null before its first. */
  get revision(): number | null {
    return this.#revision;
  }

  /**
   * Syncs once (after any sync under way) and resolves to what it did;
   * rejects only when `signal` aborts. A running loop (`run`) counts its
   * next sync from this one: an interval after a success, a backoff after a
   * failure that may pass by itself.
   */
  async sync(signal: AbortSignal): Promise<SyncResult> {
    const outcome = await this.#queued(signal);
    this.#forced = outcome;
    this.#wake?.abort();
    return outcome.result;
  }

  /**
   * Syncs now and then every `intervalMs` until `signal` aborts (then
   * resolves). A failure that may pass by itself is retried sooner, with
   * exponential backoff and full jitter (at least the server's Retry-After).
   */
  async run(signal: AbortSignal): Promise<void> {
    const backoff = new Backoff({ initialMs: 1_000, maxMs: this.#o.intervalMs, resetAfterMs: Number.POSITIVE_INFINITY, ...this.#o.backoff });
    let outcome: Outcome | undefined;
    while (!signal.aborted) {
      if (outcome === undefined) {
        try {
          outcome = await this.#queued(signal);
        } catch (err) {
          if (signal.aborted) return;
          throw err;
        }
      }
      let wait = this.#o.intervalMs;
      if (outcome.retry) {
        wait = Math.min(backoff.next(0, outcome.retryAfterMs), Math.max(this.#o.intervalMs, outcome.retryAfterMs ?? 0));
        this.#o.logger.info({ retry_in_ms: Math.round(wait) }, 'retrying the sync');
      } else backoff.reset();
      outcome = await this.#sleepUnlessForced(wait, signal);
    }
  }

  /** Waits `ms`; a forced sync ending meanwhile cuts the wait short and is returned, to count the next wait from. */
  async #sleepUnlessForced(ms: number, signal: AbortSignal): Promise<Outcome | undefined> {
    // A forced sync that ended before this wait is older than the loop's own.
    this.#forced = undefined;
    const wake = new AbortController();
    this.#wake = wake;
    try {
      await sleep(ms, AbortSignal.any([signal, wake.signal]));
    } finally {
      this.#wake = undefined;
    }
    const forced = this.#forced;
    this.#forced = undefined;
    return forced;
  }

  #queued(signal: AbortSignal): Promise<Outcome> {
    const run = this.#chain.then(() => this.#attempt(signal));
    this.#chain = run.catch(() => undefined);
    return run;
  }

  async #attempt(signal: AbortSignal): Promise<Outcome> {
    signal.throwIfAborted();
    const { client, source, logger, metrics } = this.#o;
    let text: string;
    try {
      text = await source.read(signal);
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      return this.#failed('source', err, err instanceof SourceError && err.retryable);
    }
    let org: string;
    let current;
    try {
      org = await this.#o.org(signal);
      current = await client.get(org, { signal });
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      return this.#failed('server', err, classify(err).retryable);
    }
    if (current.managed && current.text === text) {
      metrics.succeeded(this.#now());
      logger.debug({ org, source: source.location, etag: current.etag }, 'the policy document is in sync');
      return { result: { applied: false, revision: this.#revision }, retry: false, retryAfterMs: undefined };
    }
    try {
      const result = await client.apply(org, text, { ifMatch: current.etag, signal });
      this.#revision = result.revision;
      metrics.applied(result.revision);
      metrics.succeeded(this.#now());
      logger.info(
        { org, source: source.location, revision: result.revision, etag: result.etag, changes: result.changes.map((c) => `${c.op} ${c.path}`), tests: result.tests },
        result.applied ? 'applied the policy document' : 'stored the policy document (nothing changed in effect)',
      );
      return { result: { applied: true, revision: result.revision }, retry: false, retryAfterMs: undefined };
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      const { reason, retryable } = classify(err);
      return this.#failed(reason, err, retryable);
    }
  }

  #failed(reason: SyncErrorReason, err: unknown, retryable: boolean): Outcome {
    this.#o.metrics.failed(reason);
    const fields = errorFields(err);
    const line = fields.details?.['line'];
    const column = fields.details?.['column'];
    const status = err instanceof FleetplaneError && err.status !== 0 ? err.status : undefined;
    this.#o.logger[retryable ? 'warn' : 'error'](
      { reason, source: this.#o.source.location, code: fields.code, status, details: fields.details, line, column, retryable },
      `policy sync failed (${reason}); the server keeps its document: ${fields.message}`,
    );
    return {
      result: { applied: false, revision: this.#revision, error: { reason, ...fields } },
      retry: retryable,
      retryAfterMs: err instanceof FleetplaneError ? err.retryAfterMs : undefined,
    };
  }
}
