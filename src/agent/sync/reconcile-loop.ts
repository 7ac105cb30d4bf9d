/**
 * When the agent reconciles: on every change (coalesced), at every resync
 * interval (a forced re-apply that repairs drift made by hand), and again
 * after a failed apply, with exponential backoff and full jitter.
 */
import type { Logger } from 'pino';
import { Backoff, type BackoffPolicy } from '../../util/backoff.js';
import type { Reconciler } from './reconciler.js';
import type { Snapshot } from './snapshot.js';
import { sleep } from '../../util/sleep.js';
import { Wakeup } from '../wakeup.js';

export interface ReconcileLoopOptions {
  reconciler: Reconciler;
  /** The current consistent snapshot, or undefined while there is none (the source calls `request` when there is). */
  source: () => Snapshot | undefined;
  resyncIntervalMs: number;
  logger: Logger;
  /** Retry timing of failed applies (default 0.5 s doubling to 30 s). */
  backoff?: Partial<BackoffPolicy>;
}

export class ReconcileLoop {
  readonly #o: ReconcileLoopOptions;
  readonly #wake = new Wakeup();
  #force = false;

  constructor(options: ReconcileLoopOptions) {
    this.#o = options;
  }

  /** Asks for a reconcile soon; `force` re-applies even an unchanged desired state. Many requests become one. */
  request(force = false): void {
    if (force) this.#force = true;
    this.#wake.fire();
  }

  async run(signal: AbortSignal): Promise<void> {
    const backoff = new Backoff({ initialMs: 500, maxMs: 30_000, resetAfterMs: Number.MAX_SAFE_INTEGER, ...this.#o.backoff });
    let nextResync = Date.now() + this.#o.resyncIntervalMs;
    let retry = false;
    while (!signal.aborted) {
      if (!retry) await this.#wake.wait(signal, nextResync - Date.now());
      retry = false;
      if (signal.aborted) break;
      if (Date.now() >= nextResync) {
        this.#force = true;
        nextResync = Date.now() + this.#o.resyncIntervalMs;
      }
      const snapshot = this.#o.source();
      if (!snapshot) continue;
      const force = this.#force;
      this.#force = false;
      const outcome = await this.#o.reconciler.reconcile(snapshot, { force, signal });
      if (outcome.type !== 'failed') {
        backoff.reset();
        continue;
      }
      if (signal.aborted) break;
      const delayMs = backoff.next();
      this.#o.logger.debug({ delayMs: Math.round(delayMs), attempt: backoff.failures }, 'retrying the failed apply');
      await sleep(delayMs, signal);
      retry = true;
    }
  }
}
