import { ApiError } from '../errors.js';

export interface ListAdmissionOptions {
  /** Initial lists streaming at once. */
  maxActive: number;
  /** Requests waiting for a turn; one more is refused at once. */
  maxQueued: number;
  /** How long a request waits for a turn before it is refused. */
  timeoutMs: number;
  /** Seconds a refused client is told to wait (Retry-After); it adds its own jitter. */
  retryAfterS: () => number;
}

/**
 * Admission of initial lists: at most `maxActive` stream at once, the next
 * ones wait in arrival order, and a request that can't get a turn within
 * `timeoutMs` (or finds the queue full) is refused with 503 `unavailable`
 * and `Retry-After`, so a herd of agents connecting at once is served in
 * waves instead of failing with time-outs.
 */
export class ListAdmission {
  #active = 0;
  readonly #queue = new Set<{ grant(): void }>();

  constructor(private readonly o: ListAdmissionOptions) {}

  get active(): number {
    return this.#active;
  }

  get queued(): number {
    return this.#queue.size;
  }

  /** Resolves with whether the request waited; rejects with ApiError('unavailable') when refused. */
  acquire(): Promise<'immediate' | 'waited'> {
    if (this.#active < this.o.maxActive && this.#queue.size === 0) {
      this.#active++;
      return Promise.resolve('immediate');
    }
    if (this.#queue.size >= this.o.maxQueued) return Promise.reject(this.refusal());
    return new Promise((resolve, reject) => {
      const entry = {
        grant: () => {
          clearTimeout(timer);
          this.#active++;
          resolve('waited');
        },
      };
      const timer = setTimeout(() => {
        this.#queue.delete(entry);
        reject(this.refusal());
      }, this.o.timeoutMs);
      this.#queue.add(entry);
    });
  }

  /** A list finished (or its stream ended): the next waiting request gets its turn. */
  release(): void {
    this.#active = Math.max(0, this.#active - 1);
    while (this.#active < this.o.maxActive) {
      const next = this.#queue.values().next();
      if (next.done) return;
      this.#queue.delete(next.value);
      next.value.grant();
    }
  }

  private refusal(): ApiError {
    return new ApiError('unavailable', 'too many initial lists are in progress; retry after the time given', undefined, {
      retryAfterS: this.o.retryAfterS(),
    });
  }
}
