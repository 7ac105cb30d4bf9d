import { BUS } from '../../protocol/index.js';
import type { Database, ListenHandlers, Listener, Queryable } from '../db/index.js';
import { ReliableBus } from './reliable-bus.js';
import type { ReliabilityOptions } from './reliability-options.js';

const NOTIFY_ONE = 'SELECT pg_notify($1, $2)';
// unnest keeps the array order, and one statement's notifications are delivered in order.
const NOTIFY_MANY = 'SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p';

/**
 * The PostgreSQL bus (also works on PGlite, inside one process): NOTIFY on
 * BUS.pgChannel, one dedicated LISTEN session per bus through `db.listen`.
 *
 * `notifyInTransaction` issues the NOTIFY inside the writing transaction, so
 * PostgreSQL delivers it only if that transaction commits; `notify` sends
 * through the pool. Every (re)connect of the listener after the first wakes
 * everything local.
 *
 * Sequence numbers and rollbacks: a transactional message must carry its
 * number before commit, so a rolled-back transaction leaves a gap (a spurious
 * wake-all elsewhere after the gap delay). To keep that rare:
 * - the number is taken only when the NOTIFY is issued, and callers issue it
 *   as the last statement of the transaction, so only a failing COMMIT (or
 *   the caller throwing after it) leaves a gap;
 * - if the NOTIFY statement itself fails (the transaction is then certainly
 *   rolled back), the number is given back unless a later one was taken;
 * - one transaction sends at most one message per name;
 * - transactions committing out of number order are not gaps: a missing
 *   number waits the gap delay for its commit.
 * Leaving transactional messages unnumbered would avoid those gaps but make
 * their loss (and the test hook) undetectable, so they are numbered.
 */
export class PostgresBus extends ReliableBus {
  private listener: Listener | undefined;
  private generations = 0;
  /** Only the active session's handlers act: closing a session may not detach them. */
  private active = 0;
  private readonly sentInTx = new WeakMap<Queryable, Set<string>>();

  private constructor(
    private readonly db: Database,
    options: ReliabilityOptions,
  ) {
    super(options);
  }

  /** Starts listening (rejects if it can't) and announces this publisher. */
  static async open(db: Database, options: ReliabilityOptions): Promise<PostgresBus> {
    const bus = new PostgresBus(db, options);
    const generation = ++bus.generations;
    bus.active = generation;
    bus.listener = await db.listen(BUS.pgChannel, bus.handlers(generation));
    bus.startReliability();
    return bus;
  }

  /**
   * Issues the NOTIFY in `tx` (delivered only if it commits). Call it as the
   * last statement of the transaction. Returns false once the bus is closed.
   * Rejects when the statement fails (the transaction is then rolled back).
   */
  async notifyInTransaction(tx: Queryable, name: string): Promise<boolean> {
    if (this.closed) return false;
    let names = this.sentInTx.get(tx);
    if (names?.has(name)) return true;
    const m = this.publisher.reserve(name);
    if (m.payload !== undefined) {
      try {
        await tx.query(NOTIFY_ONE, [BUS.pgChannel, m.payload]);
      } catch (err) {
        this.publisher.release(m.seq);
        throw err;
      }
      this.counters.signalsSent++;
    }
    if (!names) {
      names = new Set();
      this.sentInTx.set(tx, names);
    }
    names.add(name);
    return true;
  }

  protected async publishPayloads(payloads: readonly string[]): Promise<void> {
    if (payloads.length === 1) await this.db.query(NOTIFY_ONE, [BUS.pgChannel, payloads[0]]);
    else await this.db.query(NOTIFY_MANY, [BUS.pgChannel, payloads]);
  }

  /**
   * One attempt; a failure waits for the next self-check. The old session
   * stays trusted until a new one is live: the driver may still bring it back.
   */
  protected async restartListener(): Promise<void> {
    if (this.closed) return;
    let listener: Listener;
    const generation = ++this.generations;
    try {
      listener = await this.db.listen(BUS.pgChannel, this.handlers(generation));
    } catch (err) {
      this.options.logger.error({ err }, 'restarting the bus LISTEN session failed; trying again at the next self-check');
      return;
    }
    if (this.closed) {
      await listener.close();
      return;
    }
    const old = this.listener;
    this.listener = listener;
    this.active = generation;
    this.listenerReconnected();
    try {
      await old?.close();
    } catch (err) {
      this.options.logger.warn({ err }, 'closing the replaced bus LISTEN session failed');
    }
  }

  protected async closeTransport(): Promise<void> {
    this.active = 0;
    await this.listener?.close();
  }

  private handlers(generation: number): ListenHandlers {
    let connects = 0;
    return {
      onMessage: (payload) => {
        if (generation === this.active) this.received(payload);
      },
      onConnect: () => {
        const first = connects++ === 0;
        if (first || generation !== this.active) return;
        this.options.logger.warn('bus LISTEN connection reconnected: waking every watcher');
        this.listenerReconnected();
      },
    };
  }
}
