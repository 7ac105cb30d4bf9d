/**
 * One peer's path, judged from what WireGuard reports (docs/protocol.md
 * "Paths between peers"). Pure: the path manager feeds it `wg show dump`
 * readings and carries out what it decides, so every rule is testable
 * without WireGuard.
 */
import {
  PATH_HANDSHAKE_STALE_MS,
  PATH_STALL_MS,
  PATH_TRIAL_MS,
  PATH_UPGRADE_PERIOD_MS,
} from '../../protocol/index.js';

/** What WireGuard says of the peer now (a `wg show dump` line). */
export interface PeerReading {
  endpoint: string | null;
  /** Unix seconds; 0 = never (since the peer was last set). */
  latest_handshake: number;
  rx_bytes: number;
  tx_bytes: number;
}

/** What the manager should do for this peer. */
export type PathDecision =
  /** Leave WireGuard as it is; `restun`: the path broke, so the agent's own mapping may have changed. */
  | { type: 'keep'; restun?: boolean }
  /** Point WireGuard at `candidates[index]` with a fresh session. */
  | { type: 'try-direct'; index: number; restun: boolean; generation?: number }
  /** Point WireGuard at the relay with a fresh session. */
  | { type: 'try-relay'; restun: boolean; generation?: number };

/** Least wait after a whole round of candidates (and the relay) failed; doubles up to the cap. */
export const ROUND_RETRY_FIRST_MS = 10_000;
export const ROUND_RETRY_MAX_MS = 5 * 60_000;
/** Two sends at least this far apart with nothing received since the first: the path is broken. */
const STALL_SEND_SPREAD_MS = 5_000;

export interface PathContext {
  now: number;
  /** A relay session is open. */
  relayUp: boolean;
  /** Whether an endpoint is one of the relay's loopback sockets. */
  isRelayEndpoint: (endpoint: string | null) => boolean;
}

/** FNV-1a of the two keys in order: both agents of a pair get the same upgrade slots. */
function pairOffset(a: string, b: string): number {
  const text = a < b ? `${a}${b}` : `${b}${a}`;
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % PATH_UPGRADE_PERIOD_MS;
}

export class PeerPath {
  candidates: readonly string[] = [];
  /** The trial in progress: which candidate (-1 = the relay) and when it started. */
  trial: { index: number; startedAt: number } | null = null;
  /** The last candidate (-1 = relay) a trial confirmed; null until one did. */
  confirmed: number | null = null;
  #signature = '';
  /** Bumped by every change of candidates: a trial decided before one is void (see `started`). */
  #generation = 0;
  #lastRx = -1;
  #lastTx = -1;
  #rxAt = 0;
  #sendsSinceRx: { first: number; last: number } | null = null;
  #roundFailures = 0;
  #nextRoundAt = 0;
  #lastSlot = -1;
  readonly #offset: number;

  constructor(
    readonly publicKey: string,
    ownKey: string,
    now: number,
  ) {
    this.#offset = pairOffset(publicKey, ownKey);
    this.#rxAt = now;
  }

  /** New candidates (the peer published other endpoints): true when they changed, and the next reading starts over from the first. */
  setCandidates(candidates: readonly string[]): boolean {
    const signature = candidates.join(' ');
    if (signature === this.#signature) return false;
    this.#signature = signature;
    this.#generation++;
    this.candidates = candidates;
    this.trial = null;
    this.confirmed = null;
    this.#roundFailures = 0;
    this.#nextRoundAt = 0;
    return true;
  }

  /** The relay session (re)opened: a peer that found no path tries again now. */
  relayReconnected(): void {
    if (this.confirmed === null) this.#nextRoundAt = 0;
  }

  /** Judges one reading; `started(decision)` must be called once the manager carried out a `try-*`. */
  observe(reading: PeerReading, ctx: PathContext): PathDecision {
    const decision = this.#observe(reading, ctx);
    return decision.type === 'keep' ? decision : { ...decision, generation: this.#generation };
  }

  #observe(reading: PeerReading, ctx: PathContext): PathDecision {
    const { now } = ctx;
    this.#traffic(reading, now);
    if (this.trial) {
      // A fresh session starts at handshake 0: any handshake now completed on the endpoint under trial.
      if (reading.latest_handshake > 0) {
        this.confirmed = this.trial.index;
        this.trial = null;
        this.#roundFailures = 0;
        this.#sendsSinceRx = null;
        this.#lastSlot = this.#slot(now);
        return { type: 'keep' };
      }
      if (now - this.trial.startedAt < PATH_TRIAL_MS) return { type: 'keep' };
      return this.#next(this.trial.index + 1, ctx, false);
    }
    if (this.confirmed === null) {
      if (now < this.#nextRoundAt) return { type: 'keep' };
      return this.#next(0, ctx, false);
    }
    const handshakeAge = reading.latest_handshake === 0 ? Infinity : now - reading.latest_handshake * 1000;
    const stalled = this.#sendsSinceRx !== null && this.#sendsSinceRx.last - this.#sendsSinceRx.first >= STALL_SEND_SPREAD_MS && now - this.#rxAt >= PATH_STALL_MS;
    if (handshakeAge > PATH_HANDSHAKE_STALE_MS || stalled) {
      this.confirmed = null;
      this.#sendsSinceRx = null;
      return this.#next(0, ctx, true);
    }
    if (ctx.isRelayEndpoint(reading.endpoint) && this.candidates.length > 0) {
      const slot = this.#slot(now);
      if (slot !== this.#lastSlot) {
        this.#lastSlot = slot;
        return { type: 'try-direct', index: 0, restun: false };
      }
    }
    return { type: 'keep' };
  }

  /**
   * The manager set WireGuard as `decision` said. A decision taken before
   * the candidates changed (setting WireGuard waits behind an apply, which
   * may bring new ones) starts nothing: the next reading tries the new first.
   */
  started(decision: PathDecision, now: number): void {
    if (decision.type !== 'keep' && decision.generation !== undefined && decision.generation !== this.#generation) return;
    if (decision.type === 'try-direct') this.trial = { index: decision.index, startedAt: now };
    else if (decision.type === 'try-relay') this.trial = { index: -1, startedAt: now };
  }

  /** What the path is now, for the report. */
  kind(reading: PeerReading, ctx: PathContext): 'direct' | 'relay' | 'none' {
    if (reading.latest_handshake === 0 || (this.trial !== null && this.confirmed === null)) return 'none';
    return ctx.isRelayEndpoint(reading.endpoint) ? 'relay' : 'direct';
  }

  #slot(now: number): number {
    return Math.floor((now + this.#offset) / PATH_UPGRADE_PERIOD_MS);
  }

  #traffic(reading: PeerReading, now: number): void {
    // A fresh session starts its counters at 0: a drop is a new baseline, not traffic.
    if (reading.rx_bytes > this.#lastRx && this.#lastRx >= 0) {
      this.#rxAt = now;
      this.#sendsSinceRx = null;
    }
    if (reading.tx_bytes > this.#lastTx && this.#lastTx >= 0) {
      this.#sendsSinceRx = this.#sendsSinceRx === null ? { first: now, last: now } : { first: this.#sendsSinceRx.first, last: now };
    }
    this.#lastRx = reading.rx_bytes;
    this.#lastTx = reading.tx_bytes;
  }

  /** The trial after `index` (a failed one, or 0 to start over); the relay after the direct ones; a pause after the relay. */
  #next(index: number, ctx: PathContext, restun: boolean): PathDecision {
    if (index >= 0 && index < this.candidates.length) return { type: 'try-direct', index, restun };
    if (index >= 0 && ctx.relayUp) return { type: 'try-relay', restun };
    // The whole round failed: wait, longer each time, unless the peer's endpoints or the relay change first.
    this.trial = null;
    this.#roundFailures++;
    this.#nextRoundAt = ctx.now + Math.min(ROUND_RETRY_MAX_MS, ROUND_RETRY_FIRST_MS * 2 ** (this.#roundFailures - 1));
    // A relay trial that found no handshake still leaves WireGuard on the relay, which keeps trying by itself.
    return { type: 'keep', restun };
  }
}
