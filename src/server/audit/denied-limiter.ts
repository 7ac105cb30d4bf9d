/** What the limiter decides for one refused attempt: record it, or drop it for which limit. */
export type DeniedVerdict = 'record' | 'source' | 'organization' | 'global';

export interface DeniedLimits {
  /** Entries recorded per source address per window. */
  perSource: number;
  /** Entries recorded per organization per window (the rest summarized by one entry when the window closes). */
  perOrganization: number;
  /** Entries recorded per window over all sources. */
  global: number;
  windowMs: number;
  /** Source addresses tracked at once; at the limit the longest-tracked one is forgotten. */
  maxSources: number;
  /** Organizations tracked at once; at the limit the longest-tracked one's window is closed early. */
  maxOrganizations: number;
}

export const DEFAULT_DENIED_LIMITS: DeniedLimits = {
  perSource: 10,
  perOrganization: 20,
  global: 200,
  windowMs: 60_000,
  maxSources: 10_000,
  maxOrganizations: 10_000,
};

/** Refusals in one organization's closed window that were not recorded: one summary entry. */
export interface DroppedSummary {
  readonly orgId: string;
  readonly dropped: number;
  /** Epoch ms: when the window began, and when it closed. */
  readonly since: number;
  readonly until: number;
}

interface Window {
  start: number;
  n: number;
  dropped: number;
}

/**
 * Bounds how many refused write attempts are recorded (docs/protocol.md
 * "Audit log"): fixed windows per source address, per organization and over
 * all, so a caller can neither fill the table nor one organization's log,
 * nor grow this memory past `maxSources` and `maxOrganizations` entries.
 * Forgetting a source early only lets it be recorded again sooner: the
 * global cap still holds. What an organization's window dropped, for
 * whichever limit, is handed out once the window closed (`closed`).
 */
export class DeniedLimiter {
  readonly #limits: DeniedLimits;
  readonly #now: () => number;
  readonly #sources = new Map<string, { start: number; n: number }>();
  /** In the order their windows began (a restarted window goes to the end). */
  readonly #orgs = new Map<string, Window>();
  #closed: DroppedSummary[] = [];
  #global = { start: 0, n: 0 };

  constructor(limits: Partial<DeniedLimits> = {}, now: () => number = Date.now) {
    this.#limits = { ...DEFAULT_DENIED_LIMITS, ...limits };
    this.#now = now;
  }

  /** Sources currently tracked. */
  get size(): number {
    return this.#sources.size;
  }

  /** Organizations currently tracked. */
  get organizations(): number {
    return this.#orgs.size;
  }

  get windowMs(): number {
    return this.#limits.windowMs;
  }

  /** One refusal from `source`, in `org` when it names one. */
  take(source: string, org?: string): DeniedVerdict {
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
    const w = org === undefined ? undefined : this.#window(org, now);
    const verdict: DeniedVerdict =
      s.n >= this.#limits.perSource ? 'source' : w !== undefined && w.n >= this.#limits.perOrganization ? 'organization' : this.#global.n >= this.#limits.global ? 'global' : 'record';
    if (verdict !== 'record') {
      if (w !== undefined) w.dropped++;
      return verdict;
    }
    s.n++;
    this.#global.n++;
    if (w !== undefined) w.n++;
    return verdict;
  }

  /** The summaries of organization windows closed by `now` that dropped something; each is handed out once. */
  closed(now = this.#now()): DroppedSummary[] {
    for (const [org, w] of this.#orgs) {
      if (now - w.start < this.#limits.windowMs) break;
      this.#orgs.delete(org);
      this.#close(org, w, w.start + this.#limits.windowMs);
    }
    const out = this.#closed;
    this.#closed = [];
    return out;
  }

  /** When the earliest open window that dropped something closes (epoch ms); undefined: none. */
  nextClose(): number | undefined {
    if (this.#closed.length > 0) return this.#now();
    let first: number | undefined;
    for (const w of this.#orgs.values()) if (w.dropped > 0 && (first === undefined || w.start < first)) first = w.start;
    return first === undefined ? undefined : first + this.#limits.windowMs;
  }

  #window(org: string, now: number): Window {
    const w = this.#orgs.get(org);
    if (w !== undefined && now - w.start < this.#limits.windowMs) return w;
    if (w !== undefined) {
      this.#orgs.delete(org);
      this.#close(org, w, w.start + this.#limits.windowMs);
    } else if (this.#orgs.size >= this.#limits.maxOrganizations) {
      const oldest = this.#orgs.entries().next();
      if (oldest.done !== true) {
        this.#orgs.delete(oldest.value[0]);
        this.#close(oldest.value[0], oldest.value[1], now);
      }
    }
    const fresh = { start: now, n: 0, dropped: 0 };
    this.#orgs.set(org, fresh);
    return fresh;
  }

  #close(orgId: string, w: Window, until: number): void {
    if (w.dropped > 0) this.#closed.push({ orgId, dropped: w.dropped, since: w.start, until });
  }
}
