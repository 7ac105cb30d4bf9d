import { agentSignal } from '../../protocol/index.js';
import type { SignalBus } from '../bus/index.js';

/**
 * Devices one round announces at most: half of what the bus publisher
 * queues between two sends (MAX_PENDING_NAMES), past which it sends one
 * wake-all to every replica instead. 10,000 tunnels opened at once on one
 * replica are announced within 5 s.
 */
export const ANNOUNCED_PER_ROUND = 512;

/**
 * Tells the other replicas (and workers) of the tunnels (or relay sessions) opened on this one:
 * for each device, its agent registry entry, then its `agent:<device>`
 * signal, so that a woken waiter finds the entry. Both go in rounds: a
 * joining fleet then costs one registry message set and one bus message set
 * (one NOTIFY statement on PostgreSQL) per round rather than per tunnel,
 * and wakes every replica once per round rather than once per tunnel.
 *
 * Contract:
 * - After a quiet spell, a device is announced at once (on the next timer
 *   turn, with the others of the same turn); later ones wait for the next
 *   round, at most `spacingMs` after the last. A request waiting for a
 *   device on another replica (`?wait=`) is woken at most `spacingMs` later
 *   than it would be by an announcement per tunnel; this replica's own
 *   requests see its tunnels at once.
 * - A round's signals go out once its registry writes settled
 *   (`register` never rejects, as AgentRegistry.sync).
 * - At most ANNOUNCED_PER_ROUND a round; the rest wait for the next. What
 *   waits is one entry per device, so this replica's tunnels bound it.
 * - `close` drops what is pending and ignores later calls: it is called once
 *   this replica's tunnels are closed, when there is nothing to announce.
 */
export class AgentAnnouncer {
  readonly #pending = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #lastRoundAt = Number.NEGATIVE_INFINITY;
  #closed = false;

  constructor(
    private readonly o: {
      /** Where each announced device's `agent:<device>` signal rings; without it, rounds only write the registry (relay sessions: nothing waits for them). */
      bus?: SignalBus;
      /** Writes the device's registry entry (AgentRegistry.sync). */
      register: (deviceId: string) => Promise<void>;
      spacingMs: number;
      now?: () => number;
    },
  ) {}

  /** Devices not announced yet. */
  get pending(): number {
    return this.#pending.size;
  }

  /** A tunnel to `deviceId` opened here. */
  opened(deviceId: string): void {
    if (this.#closed) return;
    this.#pending.add(deviceId);
    this.#schedule();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#pending.clear();
  }

  #now(): number {
    return this.o.now?.() ?? performance.now();
  }

  #schedule(): void {
    if (this.#timer) return;
    const wait = Math.max(0, this.#lastRoundAt + this.o.spacingMs - this.#now());
    this.#timer = setTimeout(() => this.#round(), wait);
    this.#timer.unref();
  }

  #round(): void {
    this.#timer = undefined;
    this.#lastRoundAt = this.#now();
    this.#announce(ANNOUNCED_PER_ROUND);
    if (this.#pending.size > 0) this.#schedule();
  }

  #announce(limit: number): void {
    const devices: string[] = [];
    for (const deviceId of this.#pending) {
      if (devices.length === limit) break;
      this.#pending.delete(deviceId);
      devices.push(deviceId);
    }
    if (devices.length === 0) return;
    // One turn: the registries batch the writes of a turn into one message.
    void Promise.all(devices.map((d) => this.o.register(d))).then(() => {
      const bus = this.o.bus;
      if (bus) for (const d of devices) bus.notify(agentSignal(d));
    });
  }
}
