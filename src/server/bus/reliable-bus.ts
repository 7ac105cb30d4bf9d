import type { Queryable } from '../db/index.js';
import { createBusStats, type BusStats } from './bus-stats.js';
import { LocalSubscriptions } from './local-subscriptions.js';
import { SequenceTracker } from './sequence-tracker.js';
import { SequencedPublisher } from './sequenced-publisher.js';
import type { SignalBus, Subscription } from './signal-bus.js';
import { deafAfterMs, type ReliabilityOptions } from './reliability-options.js';

/**
 * A SignalBus with reliable delivery over a lossy transport (the Dragonflow
 * pub-sub design): every message is numbered per publisher, subscribers detect
 * gaps and wake everything local after a delay, idle publishers send hellos so
 * a lost last message shows, and a listener reconnect wakes everything.
 *
 * Every replica hears its own messages too; local subscribers are woken by
 * that echo (not directly as well, so one change is one wake-up), except when
 * a send fails. The echo doubles as a self-check: a listener that stops
 * hearing its own messages is restarted.
 *
 * Drivers implement the transport and call `received`, `listenerReconnected`
 * and, once listening, `startReliability`.
 */
export abstract class ReliableBus implements SignalBus {
  protected readonly counters: BusStats = createBusStats();
  protected readonly local: LocalSubscriptions;
  protected readonly publisher: SequencedPublisher;
  private readonly tracker: SequenceTracker;
  private maintenance: NodeJS.Timeout | undefined;
  /** When we sent something we have not heard back yet (performance.now()). */
  private probe: number | undefined;
  private restarting: Promise<void> | undefined;
  private lastMaintainAt = performance.now();
  protected closed = false;

  protected constructor(protected readonly options: ReliabilityOptions) {
    this.local = new LocalSubscriptions((err) => options.logger.error({ err }, 'signal listener failed'));
    this.publisher = new SequencedPublisher(
      { publish: (payloads) => this.publishPayloads(payloads) },
      options,
      this.counters,
      (names) => {
        if (names === 'all') this.local.wakeAll();
        else for (const name of names) this.local.wake(name);
      },
    );
    this.tracker = new SequenceTracker(this.local, this.publisher.id, options, this.counters);
  }

  /** Counters for tests and metrics (live: read them when needed, don't keep a copy). */
  get stats(): Readonly<BusStats> {
    return this.counters;
  }

  /** This bus's publisher id (random per start). */
  get publisherId(): string {
    return this.publisher.id;
  }

  /** Sends payloads outside any transaction, in order. */
  protected abstract publishPayloads(payloads: readonly string[]): Promise<void>;
  /**
   * Replaces a listener that stopped hearing anything: listens again and
   * calls `listenerReconnected` once live (now or later). Resolves when the
   * attempt is over; never rejects. One at a time.
   */
  protected abstract restartListener(): Promise<void>;
  protected abstract closeTransport(): Promise<void>;
  abstract notifyInTransaction(tx: Queryable, name: string): Promise<boolean>;

  notify(name: string): void {
    this.publisher.enqueue(name);
  }

  notifyAll(): void {
    this.local.wakeAll();
  }

  subscribe(name: string, onWake: () => void): Subscription {
    return this.local.subscribe(name, onWake);
  }

  /** Sends what is still queued, then closes the transport. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.maintenance) clearInterval(this.maintenance);
    try {
      await this.publisher.close();
    } finally {
      this.tracker.close();
      await this.closeTransport();
    }
  }

  /** Drivers call this once the listener is live: announces this publisher and starts the timers. */
  protected startReliability(): void {
    this.publisher.start();
    this.maintenance = setInterval(() => this.maintain(), this.options.helloIntervalMs);
    this.maintenance.unref();
  }

  /** Drivers pass every payload received on the channel. */
  protected received(payload: string): void {
    this.tracker.receive(payload);
  }

  /** Drivers call this after the listener (re)connected (not on the first connect). */
  protected listenerReconnected(): void {
    this.probe = undefined;
    this.tracker.reconnected();
  }

  private maintain(): void {
    const now = performance.now();
    // After an event-loop stall our echo may be queued behind this timer: no verdict this time.
    const stalled = now - this.lastMaintainAt > 2 * this.options.helloIntervalMs;
    this.lastMaintainAt = now;
    this.tracker.sweep();
    if (this.restarting) return;
    const heardAt = this.tracker.ownHeardAt;
    if (this.probe !== undefined) {
      if (heardAt >= this.probe) {
        this.probe = undefined;
      } else if (!stalled && now - this.probe >= deafAfterMs(this.options)) {
        this.options.logger.error(
          { unheardForMs: Math.round(now - this.probe) },
          'bus listener stopped hearing our own messages: restarting it',
        );
        this.probe = undefined;
        this.counters.deafRestarts++;
        this.restarting = this.restartListener().finally(() => {
          this.restarting = undefined;
        });
        return;
      }
    }
    // A message sent in a transaction that rolls back never comes back, but
    // the hello that follows once idle does, well within deafAfterMs.
    const sentAt = this.publisher.lastSentAt;
    if (this.probe === undefined && sentAt > heardAt) this.probe = sentAt;
  }
}
