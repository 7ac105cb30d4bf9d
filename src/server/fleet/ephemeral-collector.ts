import type { Logger } from 'pino';
import { runPeriodically } from '../../util/periodic.js';
import { ApiError } from '../errors.js';
import type { Store } from '../store/index.js';
import { runAudited, SYSTEM_SCOPE } from '../audit/scope.js';

export interface EphemeralCollectorOptions {
  store: Store;
  /** This replica: it collects only while it is the oldest replica with a live lease. */
  replicaId: string;
  /** Devices offline for longer than this (seconds) are deleted. */
  offlineTimeoutSeconds: number;
  logger: Logger;
  /** Devices deleted per batch (default 100). */
  batchSize?: number;
  /** Batches per round at most (default 20); the rest waits for the next round. */
  maxBatchesPerRound?: number;
  /** Called after each device this collector deleted (the audit record; tests). Must not throw. */
  onDeleted?: (device: { id: string; orgId: string }) => void | Promise<void>;
}

export interface CollectResult {
  /** Devices this round deleted. */
  deleted: number;
  /** Candidates deleted meanwhile by someone else (an admin, or another replica taking over). */
  gone: number;
}

/**
 * Deletes ephemeral devices (enrolled with an ephemeral registration key)
 * once they have been offline for longer than the timeout, as Headscale's
 * ephemeral node GC does. Each goes through the store's one device delete,
 * so its tunnel IP is freed, its tokens are revoked (its streams end) and
 * every watcher gets the `delete` event.
 *
 * Contract: of replicas sharing a database, only the oldest one with a live
 * lease finds candidates (ephemeral-devices.ts), so one collects at a time
 * without a lock of its own; if leadership moves during a round, a device
 * deleted twice counts as `gone`, never as an error. A round deletes at most
 * `batchSize × maxBatchesPerRound` devices.
 */
export class EphemeralCollector {
  readonly #o: EphemeralCollectorOptions;
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(o: EphemeralCollectorOptions) {
    this.#o = o;
  }

  /** How often rounds run: a quarter of the timeout, between 1 s and 60 s. */
  get intervalMs(): number {
    return Math.min(60_000, Math.max(1_000, (this.#o.offlineTimeoutSeconds * 1000) / 4));
  }

  start(): void {
    const signal = this.#stop.signal;
    this.#loop ??= runPeriodically(this.intervalMs, signal, async () => void (await this.runOnce(signal)), (err) =>
      this.#o.logger.error({ err }, 'collecting ephemeral devices failed; retrying at the next round'),
    );
  }

  /**
   * One round: batches of candidates, each deleted, until a batch is short,
   * the round's bound is reached or `signal` aborts. Callable while the
   * periodic rounds are stopped (tests drive it directly).
   */
  async runOnce(signal?: AbortSignal): Promise<CollectResult> {
    const { store, replicaId, offlineTimeoutSeconds, logger } = this.#o;
    const batchSize = this.#o.batchSize ?? 100;
    const maxBatches = this.#o.maxBatchesPerRound ?? 20;
    const result: CollectResult = { deleted: 0, gone: 0 };
    for (let batch = 0; batch < maxBatches && signal?.aborted !== true; batch++) {
      const candidates = await store.devices.ephemeralCandidates(replicaId, offlineTimeoutSeconds, batchSize);
      for (const device of candidates) {
        try {
          // The collector's deletes are the server's own: audited with the actor `system`.
          await runAudited(SYSTEM_SCOPE, () => store.devices.delete(device.orgId, device.id));
        } catch (err) {
          if (err instanceof ApiError && err.code === 'not_found') {
            result.gone++;
            continue;
          }
          throw err;
        }
        result.deleted++;
        await this.#o.onDeleted?.(device);
      }
      if (candidates.length < batchSize) break;
    }
    if (result.deleted > 0 || result.gone > 0) logger.info({ ...result, offline_timeout_s: offlineTimeoutSeconds }, 'deleted ephemeral devices offline past the timeout');
    return result;
  }

  /** Stops the periodic rounds. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }
}
