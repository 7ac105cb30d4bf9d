import { decodeBusMessage } from '../../protocol/index.js';
import type { BusStats, ResyncReason } from './bus-stats.js';
import type { LocalSubscriptions } from './local-subscriptions.js';
import {
  forgetAfterMs,
  MAX_MISSING_PER_PUBLISHER,
  MAX_PUBLISHERS,
  type ReliabilityOptions,
} from './reliability-options.js';

interface PublisherState {
  /** Highest number received; undefined when the next one is to be adopted as is (after a reconnect). */
  highest: number | undefined;
  /** Numbers below `highest` not received yet. */
  readonly missing: Set<number>;
  /** What revealed the oldest missing number still waited for. */
  gapReason: 'gap' | 'hello';
  timer: NodeJS.Timeout | undefined;
  /** performance.now() of the last message from it. */
  lastHeard: number;
}

/**
 * The subscribing half of the reliable bus: decodes received payloads, wakes
 * local subscriptions, and tracks each publisher's sequence numbers. A missing
 * number waits `gapDelayMs` (messages of concurrent transactions can arrive
 * out of order) and then everything local is woken, since the lost message's
 * name is unknown. A message that arrives late still wakes its name.
 *
 * Memory: at most MAX_PUBLISHERS publishers (least recently heard forgotten
 * first), each with at most MAX_MISSING_PER_PUBLISHER missing numbers (a
 * larger gap wakes everything at once); publishers silent for
 * `forgetAfterMs` are forgotten by `sweep`.
 */
export class SequenceTracker {
  private readonly publishers = new Map<string, PublisherState>();
  private incomingCount = 0;
  private closed = false;
  /** performance.now() when we last heard one of our own messages (the listener self-check). */
  ownHeardAt = performance.now();

  constructor(
    private readonly local: LocalSubscriptions,
    private readonly ownId: string,
    private readonly options: ReliabilityOptions,
    private readonly stats: BusStats,
  ) {
    // We start listening before we publish, so our own numbers start complete.
    this.publishers.set(ownId, fresh(0));
    this.stats.publishers = this.publishers.size;
  }

  /** Handles one payload from the transport. Never throws. */
  receive(payload: string): void {
    if (this.closed) return;
    const m = decodeBusMessage(payload);
    if (!m) {
      this.stats.malformed++;
      this.options.logger.warn({ payload: payload.slice(0, 200) }, 'ignoring a payload on the bus channel that is not a bus message');
      return;
    }
    if (m.type !== 'hello' && this.dropThis()) return;
    if (m.publisher === this.ownId) this.ownHeardAt = performance.now();
    const known = this.publishers.get(m.publisher);
    const p = known ?? fresh(undefined);
    // Re-inserting keeps the map ordered from least to most recently heard.
    this.publishers.delete(m.publisher);
    if (!known && this.publishers.size >= MAX_PUBLISHERS) this.evictOldest();
    p.lastHeard = performance.now();
    this.publishers.set(m.publisher, p);
    this.stats.publishers = this.publishers.size;
    if (m.type === 'hello') {
      this.stats.hellosReceived++;
      this.announced(p, m.seq);
    } else {
      if (m.type === 'signal') {
        this.stats.signalsReceived++;
        this.local.wake(m.name);
      } else {
        this.stats.allsReceived++;
        this.local.wakeAll();
      }
      this.sequenced(p, m.seq);
    }
    // Messages sent before we knew this publisher (e.g. by a replica that just
    // restarted, before it died) may be lost.
    if (!known) this.resync('new-publisher');
  }

  /** The listening connection (re)connected: anything may have been missed meanwhile. */
  reconnected(): void {
    if (this.closed) return;
    this.stats.reconnects++;
    for (const p of this.publishers.values()) {
      this.clearGap(p);
      p.highest = undefined;
    }
    this.resync('reconnect');
  }

  /** Forgets publishers not heard from for `forgetAfterMs` (never our own). */
  sweep(now = performance.now()): void {
    const limit = now - forgetAfterMs(this.options);
    for (const [id, p] of this.publishers) {
      if (id === this.ownId) continue;
      if (p.lastHeard > limit) break;
      this.clearGap(p);
      this.publishers.delete(id);
    }
    this.stats.publishers = this.publishers.size;
  }

  close(): void {
    this.closed = true;
    for (const p of this.publishers.values()) this.clearGap(p);
  }

  private dropThis(): boolean {
    const n = this.options.dropEvery?.incoming ?? 0;
    if (n <= 0 || ++this.incomingCount % n !== 0) return false;
    this.stats.droppedIncoming++;
    return true;
  }

  private sequenced(p: PublisherState, seq: number): void {
    if (p.highest === undefined) {
      p.highest = seq;
    } else if (seq > p.highest) {
      const from = p.highest + 1;
      p.highest = seq;
      if (seq > from) this.openGap(p, from, seq - 1, 'gap');
    } else if (p.missing.delete(seq)) {
      this.stats.gapsFilled++;
      if (p.missing.size === 0) this.clearGap(p);
    }
  }

  private announced(p: PublisherState, seq: number): void {
    if (p.highest === undefined) {
      p.highest = seq;
    } else if (seq > p.highest) {
      const from = p.highest + 1;
      p.highest = seq;
      this.openGap(p, from, seq, 'hello');
    }
  }

  private openGap(p: PublisherState, from: number, to: number, reason: 'gap' | 'hello'): void {
    const count = to - from + 1;
    this.stats.gaps += count;
    if (p.missing.size === 0) p.gapReason = reason;
    if (this.options.gapDelayMs <= 0 || p.missing.size + count > MAX_MISSING_PER_PUBLISHER) {
      this.clearGap(p);
      this.resync(reason);
      return;
    }
    for (let s = from; s <= to; s++) p.missing.add(s);
    if (p.timer) return;
    p.timer = setTimeout(() => {
      p.timer = undefined;
      if (this.closed || p.missing.size === 0) return;
      const why = p.gapReason;
      // The wake-all covers every missing number, younger ones included:
      // a change whose message is merely late is still woken by name when it arrives.
      this.clearGap(p);
      this.resync(why);
    }, this.options.gapDelayMs);
    p.timer.unref();
  }

  private clearGap(p: PublisherState): void {
    p.missing.clear();
    if (p.timer) clearTimeout(p.timer);
    p.timer = undefined;
  }

  private evictOldest(): void {
    for (const [id, p] of this.publishers) {
      if (id === this.ownId) continue;
      this.clearGap(p);
      this.publishers.delete(id);
      this.options.logger.warn({ limit: MAX_PUBLISHERS }, 'too many bus publishers: forgot the least recently heard');
      return;
    }
  }

  private resync(reason: ResyncReason): void {
    this.stats.resyncs[reason]++;
    this.local.wakeAll();
  }
}

function fresh(highest: number | undefined): PublisherState {
  return { highest, missing: new Set(), gapReason: 'gap', timer: undefined, lastHeard: performance.now() };
}
