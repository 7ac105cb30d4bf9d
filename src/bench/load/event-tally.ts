import { WATCH_KINDS } from '../../protocol/index.js';
import { COUNTER, bump, type AgentCounters } from './agent-counters.js';

/** The watch events that carry an object or its changed members (`gzip`: either, packed): what a change to the organization costs each watcher. */
export const TALLIED_TYPES = ['change', 'patch', 'delete', 'gzip'] as const;
export type TalliedType = (typeof TALLIED_TYPES)[number];

const SLOTS = TALLIED_TYPES.length * WATCH_KINDS.length;

function slot(type: TalliedType, kind: number): number {
  // Per line on the agents' hot path: no search.
  return (type === 'change' ? 0 : type === 'patch' ? 1 : type === 'delete' ? 2 : 3) * WATCH_KINDS.length + kind;
}

/**
 * `change`, `patch`, `delete` and `gzip` lines received, and their bytes, per event type and
 * kind (`kind` is the index in WATCH_KINDS). Plain numbers, bumped per line:
 * a counter-map entry per line would cost a string key per event on the
 * agents' hot path.
 */
export class WatchEventTally {
  private readonly counts = new Array<number>(SLOTS).fill(0);
  private readonly bytes = new Array<number>(SLOTS).fill(0);

  add(type: TalliedType, kind: number, lineBytes: number): void {
    const i = slot(type, kind);
    this.counts[i] = (this.counts[i] ?? 0) + 1;
    this.bytes[i] = (this.bytes[i] ?? 0) + lineBytes;
  }

  addAll(other: WatchEventTally): void {
    for (let i = 0; i < SLOTS; i++) {
      this.counts[i] = (this.counts[i] ?? 0) + (other.counts[i] ?? 0);
      this.bytes[i] = (this.bytes[i] ?? 0) + (other.bytes[i] ?? 0);
    }
  }

  /** Adds every non-zero slot to `into` as COUNTER.events / COUNTER.eventBytes. */
  addTo(into: AgentCounters): AgentCounters {
    for (const type of TALLIED_TYPES) {
      WATCH_KINDS.forEach((kind, k) => {
        const i = slot(type, k);
        const n = this.counts[i] ?? 0;
        if (n === 0) return;
        bump(into, COUNTER.events(type, kind), n);
        bump(into, COUNTER.eventBytes(type, kind), this.bytes[i] ?? 0);
      });
    }
    return into;
  }
}
