import { randomBytes } from 'node:crypto';
import { BUS_MAX_NAME_LENGTH, encodeBusMessage, type BusMessage } from '../../protocol/index.js';
import type { BusStats } from './bus-stats.js';
import { MAX_PENDING_NAMES, type ReliabilityOptions } from './reliability-options.js';

/** How a publisher's messages leave the process. */
export interface PublishTransport {
  /** Sends the payloads in this order, outside any transaction. Rejects when some may not have been sent. */
  publish(payloads: readonly string[]): Promise<void>;
}

/** A transactional message: its number is used up even when `payload` is undefined (dropped by the test hook). */
export interface ReservedMessage {
  readonly seq: number;
  readonly payload: string | undefined;
}

/**
 * The publishing half of the reliable bus: numbers every message with this
 * publisher's id and sequence, coalesces notifies into one message per name
 * per send, and sends a hello when idle.
 *
 * Sends are single-flight: while one is in flight, further names queue (at
 * most MAX_PENDING_NAMES distinct names; beyond that they collapse into one
 * `all` message) and go out together when it settles.
 *
 * After a send fails, the next send (at the latest the next hello) carries an
 * `all` message, repeated until one is confirmed. A hello alone can't stand in
 * for the lost messages: a subscriber that reconnected after they were lost
 * adopts the hello's number without seeing a gap, and its own wake-up on
 * reconnect may have read the database before the lost change committed.
 */
export class SequencedPublisher {
  /** Random per process start (per bus instance), so a restarted replica is a new publisher. */
  readonly id = randomBytes(8).toString('hex');
  private seq = 0;
  private readonly pending = new Set<string>();
  private pendingAll = false;
  /** A send failed and no `all` message was confirmed since. */
  private owedAll = false;
  private helloWanted = false;
  private scheduled = false;
  private inFlight: Promise<void> | undefined;
  private closed = false;
  private signalCount = 0;
  private lastHelloRequestAt = -Infinity;
  private lastReservedAt = -Infinity;
  private helloTimer: NodeJS.Timeout | undefined;
  private consecutiveFailures = 0;
  /** When the latest send that succeeded started: its echo can only be heard after that. */
  private confirmedAt = -Infinity;

  constructor(
    private readonly transport: PublishTransport,
    private readonly options: ReliabilityOptions,
    private readonly stats: BusStats,
    /** Called with the names of messages that failed to send ('all' for an `all` message): our own copy won't come back, so wake them locally. */
    private readonly onSendFailed: (names: readonly string[] | 'all') => void,
  ) {}

  /** Announces this publisher with a hello and starts the idle hellos. */
  start(): void {
    this.requestHello();
    this.armHello();
  }

  /**
   * performance.now() when the last message was sent (a send the transport
   * confirmed, or a NOTIFY issued in a transaction); -Infinity before the first.
   */
  get lastSentAt(): number {
    return Math.max(this.confirmedAt, this.lastReservedAt);
  }

  /** Queues a signal of `name` for the next send. Never throws. */
  enqueue(name: string): void {
    if (this.closed) {
      this.options.logger.debug({ name }, 'signal after the bus closed: not sent');
      return;
    }
    if (name.length > BUS_MAX_NAME_LENGTH) {
      this.options.logger.error({ length: name.length }, 'signal name too long for the bus: sending a wake-all instead');
      this.pendingAll = true;
    } else if (!this.pendingAll) {
      this.pending.add(name);
      if (this.pending.size > MAX_PENDING_NAMES) {
        this.stats.overflows++;
        this.options.logger.warn({ limit: MAX_PENDING_NAMES }, 'bus publisher queue full: sending one wake-all instead');
        this.pendingAll = true;
      }
    }
    if (this.pendingAll) this.pending.clear();
    this.schedule();
  }

  /**
   * Numbers a message for `name` to be sent inside a transaction by the
   * caller. Taking the number as late as possible (when the NOTIFY is issued)
   * keeps rolled-back transactions from leaving gaps; see PostgresBus.
   */
  reserve(name: string): ReservedMessage {
    const seq = ++this.seq;
    this.lastReservedAt = performance.now();
    if (this.dropThis()) return { seq, payload: undefined };
    const m: BusMessage =
      name.length > BUS_MAX_NAME_LENGTH ? { type: 'all', publisher: this.id, seq } : { type: 'signal', publisher: this.id, seq, name };
    return { seq, payload: encodeBusMessage(m) };
  }

  /** Gives back a reserved number whose message was certainly not sent, if no later number was taken. */
  release(seq: number): void {
    if (seq === this.seq) this.seq--;
  }

  /** Sends a hello with the current sequence number soon. */
  requestHello(): void {
    if (this.closed) return;
    this.helloWanted = true;
    this.lastHelloRequestAt = performance.now();
    this.schedule();
  }

  /** Stops hellos and sends what is still queued. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.helloTimer) clearTimeout(this.helloTimer);
    this.helloWanted = false;
    while (this.inFlight || this.pendingAll || this.pending.size > 0) {
      await (this.inFlight ?? this.flush());
    }
  }

  private dropThis(): boolean {
    const n = this.options.dropEvery?.outgoing ?? 0;
    if (n <= 0 || ++this.signalCount % n !== 0) return false;
    this.stats.droppedOutgoing++;
    return true;
  }

  private armHello(): void {
    if (this.closed) return;
    const due = Math.max(this.lastSentAt, this.lastHelloRequestAt) + this.options.helloIntervalMs;
    this.helloTimer = setTimeout(() => {
      if (performance.now() >= Math.max(this.lastSentAt, this.lastHelloRequestAt) + this.options.helloIntervalMs - 1) {
        this.requestHello();
      }
      this.armHello();
    }, Math.max(1, due - performance.now()));
    this.helloTimer.unref();
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight) return;
    this.scheduled = true;
    // setImmediate: every notify of this tick goes into one send.
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private flush(): Promise<void> {
    if (this.inFlight) return this.inFlight;
    const payloads: string[] = [];
    const names: string[] = [];
    let all = false;
    let signals = 0;
    const add = (m: BusMessage): void => {
      payloads.push(encodeBusMessage(m));
    };
    if (this.pendingAll || this.owedAll) {
      const seq = ++this.seq;
      if (!this.dropThis()) {
        add({ type: 'all', publisher: this.id, seq });
        all = true;
        signals++;
      }
    } else {
      for (const name of this.pending) {
        const seq = ++this.seq;
        if (this.dropThis()) continue;
        add({ type: 'signal', publisher: this.id, seq, name });
        names.push(name);
        signals++;
      }
    }
    this.pending.clear();
    this.pendingAll = false;
    const hello = this.helloWanted;
    this.helloWanted = false;
    if (hello) add({ type: 'hello', publisher: this.id, seq: this.seq });
    if (payloads.length === 0) return Promise.resolve();
    const startedAt = performance.now();
    const flight = this.transport.publish(payloads).then(
      () => {
        this.stats.signalsSent += signals;
        if (hello) this.stats.hellosSent++;
        if (all) this.owedAll = false;
        this.confirmedAt = Math.max(this.confirmedAt, startedAt);
        if (this.consecutiveFailures > 0) {
          this.options.logger.info({ failedSends: this.consecutiveFailures }, 'bus publishing recovered');
          this.consecutiveFailures = 0;
        }
      },
      (err: unknown) => {
        this.stats.sendFailures += payloads.length;
        this.owedAll = true;
        // One log line per outage, not one per send.
        if (this.consecutiveFailures++ === 0) this.options.logger.error({ err }, 'bus publish failed; other replicas will see a gap');
        if (all) this.onSendFailed('all');
        else if (names.length > 0) this.onSendFailed(names);
      },
    );
    this.inFlight = flight.finally(() => {
      this.inFlight = undefined;
      if (this.helloWanted || this.pendingAll || this.pending.size > 0) this.schedule();
    });
    return this.inFlight;
  }
}
