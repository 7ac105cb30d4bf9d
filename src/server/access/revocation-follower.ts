import type { Logger } from 'pino';
import type { Queryable } from '../db/index.js';
import { runPeriodically } from '../../util/periodic.js';
import { RevocationCursor, type TokenIndex } from '../store/index.js';

/**
 * The one follower of token revocations on a replica: every interval, one
 * query for tokens revoked since the last (made on any replica), which
 * leave the token index first and are then handed to the subscribers (watch
 * streams and agent tunnels opened with them end). In that order, a
 * connection authenticated from the index before the revocation is known is
 * already registered when its subscriber is told, and one authenticated
 * after it asks the database.
 */
export class RevocationFollower {
  readonly #cursor: RevocationCursor;
  readonly #subscribers = new Set<(tokenIds: readonly string[]) => void>();
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(
    db: Queryable,
    private readonly tokens: TokenIndex,
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {
    this.#cursor = new RevocationCursor(db);
  }

  /** Calls `onRevoked` with the ids of tokens revoked (an id may come twice). Returns the unsubscribe. */
  subscribe(onRevoked: (tokenIds: readonly string[]) => void): () => void {
    this.#subscribers.add(onRevoked);
    return () => this.#subscribers.delete(onRevoked);
  }

  start(): void {
    this.#loop ??= runPeriodically(this.intervalMs, this.#stop.signal, () => this.check(), (err) =>
      this.logger.error({ err }, 'revocation check failed; retrying at the next interval'),
    );
  }

  /** One round: revocations since the last round, to the index, then to the subscribers. */
  async check(): Promise<void> {
    const ids = await this.#cursor.next();
    if (ids.length === 0) return;
    this.tokens.revoke(ids);
    for (const s of this.#subscribers) s(ids);
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }
}
