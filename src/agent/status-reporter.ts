/**
 * The device's report to the server (`PUT .../devices/{id}/status`), sent
 * through a DirtySet: flushed at once when the status changes (coalesced
 * while a flush is in flight) and every interval (which refreshes
 * `last_seen`); a failed flush is retried as a whole after a backoff;
 * nothing is sent once the device is known to be deleted.
 */
import type { Logger } from 'pino';
import { AuthError, Backoff, NotFoundError, type BackoffPolicy, type FleetplaneClient } from '../client/index.js';
import type { DeviceStatusInput } from '../protocol/index.js';
import { DirtySet } from './dirty-set.js';
import { errorMessage } from './errors.js';
import { sleep, Wakeup } from './wake.js';

/** What the agent reports; `online` and `last_seen` are added when sending. */
export interface StatusFields {
  applied_revision: number | null;
  apply_error: string | null;
  local_endpoints: string[];
  os: string | null;
  agent_version: string | null;
}

export interface StatusReporterOptions {
  client: FleetplaneClient;
  org: string;
  deviceId: string;
  /** Time between reports when nothing changes. */
  intervalMs: number;
  initial: StatusFields;
  logger: Logger;
  /** Retry timing of failed flushes (default 1 s doubling to the interval). */
  backoff?: Partial<BackoffPolicy>;
  /**
   * Least time between two flushes: changes within it go up together. Keeps a
   * burst of changes from costing the server one PUT per change per device.
   * Default min(1 s, interval / 4).
   */
  minSpacingMs?: number;
  /** Bound of one PUT. Default 10 s. */
  requestTimeoutMs?: number;
  /** The server answered that the device doesn't exist (404) or refused the token (401/403). */
  onRejected?: (kind: 'device_gone' | 'token_refused', error: Error) => void;
}

export interface StatusReporterStats {
  sent: number;
  failed: number;
  last_sent_at: string | null;
  last_error: string | null;
}

// The limits of DeviceStatusInput in PROTOCOL.md's schema.
const MAX_ERROR_CHARS = 4096;
const MAX_LOCAL_ENDPOINTS = 64;
const MAX_LOCAL_ENDPOINT_CHARS = 64;

function bounded(fields: StatusFields, online: boolean): DeviceStatusInput {
  return {
    online,
    applied_revision: fields.applied_revision,
    apply_error: fields.apply_error === null ? null : fields.apply_error.slice(0, MAX_ERROR_CHARS),
    local_endpoints: fields.local_endpoints.filter((e) => e.length <= MAX_LOCAL_ENDPOINT_CHARS).slice(0, MAX_LOCAL_ENDPOINTS),
    os: fields.os === null ? null : fields.os.slice(0, 256),
    agent_version: fields.agent_version === null ? null : fields.agent_version.slice(0, 64),
  };
}

function sameFields(a: StatusFields, b: StatusFields): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export class StatusReporter {
  readonly #o: StatusReporterOptions;
  readonly #dirty = new DirtySet<string, DeviceStatusInput>({ maxKeys: 1 });
  readonly #wake = new Wakeup();
  readonly #backoff: Backoff;
  #fields: StatusFields;
  #stats: StatusReporterStats = { sent: 0, failed: 0, last_sent_at: null, last_error: null };

  constructor(options: StatusReporterOptions) {
    this.#o = options;
    this.#fields = { ...options.initial };
    this.#backoff = new Backoff({ initialMs: 1_000, maxMs: options.intervalMs, resetAfterMs: Number.MAX_SAFE_INTEGER, ...options.backoff });
  }

  get fields(): Readonly<StatusFields> {
    return this.#fields;
  }

  get stats(): Readonly<StatusReporterStats> {
    return this.#stats;
  }

  /** True once the device is known to be deleted: nothing more is sent. */
  get deleted(): boolean {
    return this.#dirty.isDeleted(this.#o.deviceId);
  }

  /** Merges `changes`; when that changes anything, the status is marked dirty and a flush is woken. */
  update(changes: Partial<StatusFields>): void {
    const next = { ...this.#fields, ...changes };
    if (sameFields(next, this.#fields)) return;
    this.#fields = next;
    if (this.#dirty.mark(this.#o.deviceId, bounded(next, true))) this.#wake.fire();
  }

  /** The device was deleted: drop what is pending and never send again. */
  deviceDeleted(): void {
    this.#dirty.delete(this.#o.deviceId);
  }

  /**
   * Flushes on change and every interval until `signal` aborts. A failed
   * flush waits a backoff (full jitter), then the whole status goes again.
   */
  async run(signal: AbortSignal): Promise<void> {
    // The first report goes when the first reconcile updates the status; the interval only refreshes.
    let nextTick = Date.now() + this.#o.intervalMs;
    let retry = false;
    let lastFlush = 0;
    const spacing = this.#o.minSpacingMs ?? Math.min(1_000, this.#o.intervalMs / 4);
    while (!signal.aborted) {
      if (!retry) await this.#wake.wait(signal, nextTick - Date.now());
      const early = lastFlush + spacing - Date.now();
      if (early > 0) await sleep(early, signal);
      if (signal.aborted) break;
      lastFlush = Date.now();
      if (Date.now() >= nextTick) {
        this.#dirty.mark(this.#o.deviceId, bounded(this.#fields, true));
        nextTick = Date.now() + this.#o.intervalMs;
      }
      try {
        await this.#flush(signal);
        this.#backoff.reset();
        retry = false;
      } catch (err) {
        if (signal.aborted) break;
        const delayMs = this.#backoff.next();
        this.#o.logger.warn({ err, delayMs: Math.round(delayMs) }, 'status report failed; retrying');
        await sleep(delayMs, signal);
        retry = true;
      }
    }
  }

  /** One last report with `online: false` (shutdown), bounded by `timeoutMs`; failures are logged. */
  async goodbye(timeoutMs: number): Promise<void> {
    if (!this.#dirty.mark(this.#o.deviceId, bounded(this.#fields, false))) return;
    try {
      await this.#flush(AbortSignal.timeout(timeoutMs));
    } catch (err) {
      this.#o.logger.warn({ err }, 'the final status report (offline) failed');
    }
  }

  async #flush(signal: AbortSignal): Promise<void> {
    await this.#dirty.flush(async (entries) => {
      for (const [id, status] of entries) {
        try {
          await this.#o.client.devices.putStatus(this.#o.org, id, status, {
            signal: AbortSignal.any([signal, AbortSignal.timeout(this.#o.requestTimeoutMs ?? 10_000)]),
          });
        } catch (err) {
          if (err instanceof NotFoundError) {
            // The device is gone: nothing may be sent for it again (RFD 28: no resend after a delete).
            this.#dirty.delete(id);
            this.#o.onRejected?.('device_gone', err);
            continue;
          }
          this.#stats.failed++;
          this.#stats.last_error = errorMessage(err);
          if (err instanceof AuthError) this.#o.onRejected?.('token_refused', err);
          throw err;
        }
        this.#stats.sent++;
        this.#stats.last_sent_at = new Date().toISOString();
        this.#stats.last_error = null;
      }
    });
  }
}
