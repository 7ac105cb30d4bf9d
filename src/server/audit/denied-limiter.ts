/** What the limiter decides for one refused attempt: record it, or drop it for which limit. */
export type DeniedVerdict = 'record' | 'source' | 'global';

export interface DeniedLimits {
  /** Entries recorded per source address per window. */
  perSource: number;
  /** Entries recorded per window over all sources. */
  global: number;
  windowMs: number;
  /** Source addresses tracked at once; at the limit the longest-tracked one is forgotten. */
  maxSources: number;
}

export const DEFAULT_DENIED_LIMITS: DeniedLimits = { perSource: 10, global: 200, windowMs: 60_000, maxSources: 10_000 };

/**
 * Bounds how many refused write attempts are recorded (docs/protocol.md
 * "Audit log"): fixed windows per source address and over all, so an
 * attacker can neither fill the table nor grow this memory past
 * `maxSources` entries. Forgetting a source early only lets it be recorded
 * again sooner: the global cap still holds.
 */
export class DeniedLimiter {
  readonly #limits: DeniedLimits;
  readonly #now: () => number;
  readonly #sources = new Map<string, { start: number; n: number }>();
  #global = { start: 0, n: 0 };

  constructor(limits: DeniedLimits = DEFAULT_DENIED_LIMITS, now: () => number = Date.now) {
    this.#limits = limits;
    this.#now = now;
  }

  /** Sources currently tracked. */
  get size(): number {
    return this.#sources.size;
  }

  take(source: string): DeniedVerdict {
    const now = this.#now();
    const { windowMs } = this.#limits;
    if (now - this.#global.start >= windowMs) this.#global = { start: now, n: 0 };
    let s = this.#sources.get(source);
    if (s === undefined || now - s.start >= windowMs) {
      if (s === undefined && this.#sources.size >= this.#limits.maxSources) {
        const oldest = this.#sources.keys().next();
        if (oldest.done !== true) this.#sources.delete(oldest.value);
      }
      this.#sources.delete(source);
      s = { start: now, n: 0 };
      this.#sources.set(source, s);
    }
    if (s.n >= this.#limits.perSource) return 'source';
    if (this.#global.n >= this.#limits.global) return 'global';
    s.n++;
    this.#global.n++;
    return 'record';
  }
}
