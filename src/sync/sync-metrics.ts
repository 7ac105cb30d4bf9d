import { Counter, Gauge, Registry } from 'prom-client';
import { SYNC_ERROR_REASONS, SYNC_METRICS, type SyncErrorReason } from '../protocol/index.js';

/** The syncer's metrics (SYNC_METRICS), in a registry of their own: `GET /metrics` serves these only. */
export class SyncMetrics {
  readonly registry = new Registry();
  readonly #revision: Gauge;
  readonly #applies: Counter;
  readonly #errors: Counter<'reason'>;
  readonly #lastSuccess: Gauge;
  readonly #sourceOk: Gauge;

  constructor() {
    const registers = [this.registry];
    this.#revision = new Gauge({ name: SYNC_METRICS.lastAppliedRevision, help: 'Organization revision of the last document this syncer applied.', registers });
    this.#applies = new Counter({ name: SYNC_METRICS.appliesTotal, help: 'Documents this syncer applied (PUT successfully).', registers });
    this.#errors = new Counter({
      name: SYNC_METRICS.errorsTotal,
      help: 'Failed syncs, by reason: source (unreadable), invalid (400 policy_invalid, or 409 conflict: it drops a group devices name by id), tests (422 policy_test_failed), server (any other answer, or none).',
      labelNames: ['reason'],
      registers,
    });
    this.#lastSuccess = new Gauge({ name: SYNC_METRICS.lastSuccessTimestampSeconds, help: 'Unix time of the last sync that ended without error, applied or not.', registers });
    this.#sourceOk = new Gauge({ name: SYNC_METRICS.sourceOk, help: '1 when the last source read gave a document the server took or already had; 0 when it was unreadable, invalid or failed its tests.', registers });
    // Every reason from 0: a rate() over a series that appears only at its first error misses that error.
    for (const reason of SYNC_ERROR_REASONS) this.#errors.inc({ reason }, 0);
  }

  applied(revision: number): void {
    this.#applies.inc();
    this.#revision.set(revision);
  }

  succeeded(nowMs: number): void {
    this.#lastSuccess.set(nowMs / 1000);
    this.#sourceOk.set(1);
  }

  failed(reason: SyncErrorReason): void {
    this.#errors.inc({ reason });
    // A server failure says nothing about the source.
    if (reason !== 'server') this.#sourceOk.set(0);
  }

  /** The text exposition format, and its content type. */
  async scrape(): Promise<{ text: string; contentType: string }> {
    return { text: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}
