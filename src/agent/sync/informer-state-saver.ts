/**
 * When the informers' state is saved: after a change, at most once per
 * interval while changes keep coming, and once more when the agent stops;
 * never when the resume point hasn't moved. It runs on its own loop, so
 * reconciling never waits for the disk.
 */
import type { Logger } from 'pino';
import type { InformersState } from '../../client/index.js';
import type { SaveOutcome } from './informer-state-file.js';
import { sleep } from '../../util/sleep.js';
import { Wakeup } from '../wakeup.js';

/** Default least time between two writes. */
export const DEFAULT_SAVE_INTERVAL_MS = 5_000;

export interface InformerStateSaverOptions {
  /** The state to save, or undefined while there is none worth saving (e.g. during a relist). */
  snapshot: () => InformersState | undefined;
  save: (state: InformersState) => Promise<SaveOutcome>;
  /** The state the file already holds (what this start was seeded with): not written again. */
  saved?: InformersState | undefined;
  intervalMs?: number;
  logger: Logger;
}

/**
 * Every object change takes a new revision, so the per-kind resume points
 * say whether the state moved (a relist ends at the head, past any point saved before it).
 */
function resumeKey(state: InformersState): string {
  return Object.entries(state)
    .map(([kind, s]) => `${kind}:${s.revision}:${String(s.atTail)}`)
    .sort()
    .join(',');
}

export class InformerStateSaver {
  readonly #o: InformerStateSaverOptions;
  readonly #wake = new Wakeup();
  #savedKey: string | undefined;
  /** Counts what `save` did, for the status and tests. */
  readonly stats = { written: 0, skipped: 0, failed: 0 };

  constructor(options: InformerStateSaverOptions) {
    this.#o = options;
    this.#savedKey = options.saved ? resumeKey(options.saved) : undefined;
  }

  /** Something changed: save within the interval. Any number of calls become one write. */
  request(): void {
    this.#wake.fire();
  }

  /** Saves after requests until `signal` aborts, then once more (if anything changed). */
  async run(signal: AbortSignal): Promise<void> {
    const intervalMs = this.#o.intervalMs ?? DEFAULT_SAVE_INTERVAL_MS;
    while (!signal.aborted) {
      if (!(await this.#wake.wait(signal))) continue;
      // Changes that arrive meanwhile join this write.
      await sleep(intervalMs, signal);
      if (signal.aborted) break;
      await this.#flush();
    }
    await this.#flush();
  }

  async #flush(): Promise<void> {
    const state = this.#o.snapshot();
    if (!state) return;
    const key = resumeKey(state);
    if (key === this.#savedKey) {
      this.stats.skipped++;
      return;
    }
    try {
      const outcome = await this.#o.save(state);
      this.#savedKey = key;
      if (outcome === 'written') this.stats.written++;
    } catch (err) {
      this.stats.failed++;
      this.#o.logger.warn({ err }, 'saving the informer state failed; trying again at the next change');
    }
  }
}
