import type { Logger } from 'pino';
import type { DeviceStatusInput } from '../../protocol/index.js';
import type { StatusBatchExceptions, StatusBatch, StatusWrite } from '../store/index.js';
import { ApiError, shuttingDown } from '../errors.js';
import type { FleetMetrics } from './fleet-metrics.js';
import { sameReport } from './same-report.js';

/** How a submitted status ended: recorded (its batch committed), or not, with the error to answer. */
export type StatusOutcome = { readonly ok: true } | { readonly ok: false; readonly error: ApiError };

export interface StatusBatcherOptions {
  /** Writes one batch in one statement; returns the statuses not recorded, and those that changed nothing. */
  write(batch: StatusBatch): Promise<StatusBatchExceptions>;
  replicaId: string;
  /** Least time between the starts of two batches. */
  intervalMs: number;
  /** Devices with a status waiting for a batch; a new one past it is refused (503, retry later). */
  maxPending: number;
  /** Rows per statement; more wait for the next batch, which starts at once. */
  maxBatch: number;
  /** After a batch committed: the organizations whose devices' status or presence it changed. */
  onFlushed(orgIds: ReadonlySet<string>): void;
  /**
   * A recorded status changed its device's applied revision or error (a new
   * ACK or NACK, not a repeated report); `receivedAt` (performance.now()) is
   * when the server received it.
   */
  onChanged?(write: StatusWrite, receivedAt: number): void;
  /** A status was recorded (its batch committed and its device exists), whether or not it changed anything. */
  onRecorded?(write: StatusWrite): void;
  metrics: FleetMetrics;
  logger: Logger;
}

interface Pending {
  write: StatusWrite;
  receivedAt: number;
  waiters: ((o: StatusOutcome) => void)[];
}

const OK: StatusOutcome = { ok: true };

/**
 * The single writer of device statuses and presence on one replica
 * (docs/protocol.md "Device status and liveness"). Statuses from `PUT` and
 * from tunnel frames, and presence changes, are kept in memory, latest per
 * device, and written at most once per `intervalMs` in one statement, so
 * the database sees work per batch, never per agent.
 *
 * Contract:
 * - `submit` resolves once the batch holding the status (or a newer status
 *   of the same device that superseded it) committed: `ok`, or `not_found`
 *   when the device no longer exists, or `unavailable` when the write
 *   failed or the replica is closing. It never rejects.
 * - A tunnel status equal to the last one written for a device that is
 *   still connected here is acknowledged without a write: liveness comes
 *   from the connection, not from repeated reports.
 * - Whether a tunnel status repeats the stored applied revision and error
 *   is decided against the last status written here for that device, while
 *   it stays connected here, without reading it back; a PUT of the same
 *   device through another replica meanwhile can make one ACK count as new
 *   in `onChanged` (its latency is observed once more), nothing else.
 * - Presence changes that fail to be written are kept and written with the
 *   next batch; statuses are not (their senders are told and send again).
 * - Memory: at most `maxPending` pending statuses plus one presence change
 *   and one remembered status per connected device.
 */
export class StatusBatcher {
  readonly #o: StatusBatcherOptions;
  #pending = new Map<string, Pending>();
  #presence = new Map<string, { orgId: string; in: boolean }>();
  /** Last status written per connected device, for tunnel reports that repeat it (never mutated: inputs are the senders' parsed bodies). */
  readonly #written = new Map<string, DeviceStatusInput>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #lastStart = Number.NEGATIVE_INFINITY;
  #closed = false;

  constructor(options: StatusBatcherOptions) {
    this.#o = options;
    options.metrics.observePending(() => this.#pending.size);
  }

  /** Statuses waiting for a batch. */
  get pending(): number {
    return this.#pending.size;
  }

  submit(write: StatusWrite): Promise<StatusOutcome> {
    return new Promise((resolve) => this.enqueue(write, resolve));
  }

  /** `submit` without a promise: `done` is called once with the outcome (at once when there is nothing to write). */
  enqueue(write: StatusWrite, done: (outcome: StatusOutcome) => void): void {
    if (this.#closed) {
      done({ ok: false, error: shuttingDown() });
      return;
    }
    const last = write.via === 'tunnel' && !this.#pending.has(write.deviceId) ? this.#written.get(write.deviceId) : undefined;
    if (last && sameReport(last, write.input)) {
      this.#o.metrics.statusUnchanged.inc();
      done(OK);
      return;
    }
    const current = this.#pending.get(write.deviceId);
    if (!current && this.#pending.size >= this.#o.maxPending) {
      this.#o.metrics.statusRefused.inc();
      done({ ok: false, error: new ApiError('unavailable', 'too many statuses are waiting to be written; retry', undefined, { retryAfterS: 1 }) });
      return;
    }
    if (current) {
      current.write = write;
      current.receivedAt = performance.now();
      current.waiters.push(done);
    } else this.#pending.set(write.deviceId, { write, receivedAt: performance.now(), waiters: [done] });
    this.#schedule();
  }

  /** The device's first connection (tunnel or watch stream) on this replica opened. */
  connected(deviceId: string, orgId: string): void {
    this.#presence.set(deviceId, { orgId, in: true });
    this.#schedule();
  }

  /** The device's last connection on this replica closed. */
  disconnected(deviceId: string, orgId: string): void {
    this.#presence.set(deviceId, { orgId, in: false });
    this.#written.delete(deviceId);
    this.#schedule();
  }

  /** Writes what is pending now (and waits for a batch in flight). */
  async flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    while (this.#flushing) await this.#flushing;
    if (this.#pending.size === 0 && this.#presence.size === 0) return;
    this.#flushing = this.#flushOnce().finally(() => {
      this.#flushing = undefined;
      this.#schedule();
    });
    await this.#flushing;
  }

  /** Writes what is pending, then refuses new statuses. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.flush();
    while (this.#pending.size > 0 || this.#presence.size > 0) {
      const before = this.#pending.size + this.#presence.size;
      await this.flush();
      // A database that keeps failing must not hold the shutdown forever.
      if (this.#pending.size + this.#presence.size >= before) break;
    }
    for (const p of this.#pending.values()) this.#settle(p, { ok: false, error: shuttingDown() });
    this.#pending.clear();
  }

  /** Tells every sender of a pending status; one whose callback throws does not keep the others from hearing. */
  #settle(p: Pending, outcome: StatusOutcome): void {
    for (const w of p.waiters) {
      try {
        w(outcome);
      } catch (err) {
        this.#o.logger.error({ err, device: p.write.deviceId }, 'answering a status sender failed');
      }
    }
  }

  #schedule(): void {
    if (this.#timer || this.#flushing) return;
    if (this.#pending.size === 0 && this.#presence.size === 0) return;
    const wait = Math.max(0, this.#lastStart + this.#o.intervalMs - performance.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.flush();
    }, wait);
  }

  async #flushOnce(): Promise<void> {
    this.#lastStart = performance.now();
    const taken: Pending[] = [];
    if (this.#pending.size <= this.#o.maxBatch) {
      // A fresh map, not a delete per entry: each delete of a fleet's batch would shrink and rehash the table.
      for (const p of this.#pending.values()) taken.push(p);
      this.#pending = new Map();
    } else {
      for (const [id, p] of this.#pending) {
        if (taken.length >= this.#o.maxBatch) break;
        taken.push(p);
        this.#pending.delete(id);
      }
    }
    const presence = this.#presence;
    this.#presence = new Map();
    const batch: StatusBatch = {
      replicaId: this.#o.replicaId,
      statuses: taken.map((p) => p.write),
      connected: [...presence].filter(([, v]) => v.in).map(([id]) => id),
      disconnected: [...presence].filter(([, v]) => !v.in).map(([id]) => id),
      // What this replica last wrote for a device still connected here is what the database holds.
      lastWritten: taken.map((p) => (p.write.via === 'tunnel' ? this.#written.get(p.write.deviceId) : undefined)),
    };
    let exceptions: StatusBatchExceptions;
    try {
      exceptions = await this.#o.write(batch);
    } catch (err) {
      this.#o.logger.warn({ err, statuses: taken.length, presence: presence.size }, 'writing a status batch failed; presence is retried, senders are told');
      this.#o.metrics.statusBatchFailures.inc();
      // A newer presence change of the same device, made meanwhile, wins.
      for (const [id, v] of presence) if (!this.#presence.has(id)) this.#presence.set(id, v);
      const error = new ApiError('unavailable', 'the status could not be written; retry', undefined, { cause: err });
      for (const p of taken) this.#settle(p, { ok: false, error });
      return;
    }
    this.#o.metrics.statusBatches.inc();
    this.#o.metrics.statusesWritten.inc(taken.length - exceptions.gone.size);
    const orgs = new Set<string>();
    for (const p of taken) {
      const id = p.write.deviceId;
      const ok = !exceptions.gone.has(id);
      if (ok) {
        orgs.add(p.write.orgId);
        // A PUT's row also keeps its `online`, which a tunnel frame's does not: the next frame is written whatever it says.
        if (p.write.via === 'tunnel') this.#written.set(id, p.write.input);
        else this.#written.delete(id);
        this.#o.onRecorded?.(p.write);
        if (!exceptions.repeated.has(id)) this.#o.onChanged?.(p.write, p.receivedAt);
      }
      const outcome: StatusOutcome = ok ? OK : { ok: false, error: new ApiError('not_found', 'device not found') };
      this.#settle(p, outcome);
    }
    for (const v of presence.values()) orgs.add(v.orgId);
    if (orgs.size > 0) this.#o.onFlushed(orgs);
  }
}
