import type { Queryable } from '../db/index.js';

/** A subscription to one signal name. */
export interface Subscription {
  /** Stops wake-ups. Idempotent. */
  close(): void;
}

/**
 * A doorbell, not a message queue: it says "something named X changed, go and
 * look", never what changed. The database stays the truth.
 *
 * Contract:
 * - `notify` and `notifyAll` never block and never throw; delivery is
 *   asynchronous.
 * - Coalescing: any number of notifications of a name before a subscriber's
 *   wake-up runs become one wake-up.
 * - A wake-up may be spurious; a lost one is repaired by the caller's periodic
 *   safety check, and drivers that can detect loss call `notifyAll` locally.
 * - `subscribe` is live when it returns: a notification sent after it returns
 *   reaches the listener.
 */
export interface SignalBus {
  /** Signals `name` to its subscribers on every replica sharing this bus. */
  notify(name: string): void;
  /** Wakes every local subscription of every name (after possible message loss). */
  notifyAll(): void;
  subscribe(name: string, onWake: () => void): Subscription;
  /**
   * For drivers that publish through the database: issue the signal inside
   * the writing transaction, so it is delivered only if it commits. Returns
   * false when this driver doesn't (the caller then calls `notify` after commit).
   */
  notifyInTransaction(tx: Queryable, name: string): Promise<boolean>;
  close(): Promise<void>;
}
