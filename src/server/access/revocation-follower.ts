import type { Logger } from 'pino';
import type { Queryable } from '../db/index.js';
import { runPeriodically } from '../../util/periodic.js';
import { TokenChangeCursor, type TokenIndex } from '../store/index.js';

/**
 * The one follower of the tokens table on a replica: every interval, one
 * query for what changed since the last (on any replica).
 * - Revoked and expired tokens leave the token index first and are then
 *   handed to the subscribers (watch streams and agent tunnels opened with
 *   them end). In that order, a connection authenticated from the index
 *   before the revocation is known is already registered when its
 *   subscriber is told, and one authenticated after it asks the database.
 * - Tokens created since, and valid, enter the index: a fleet enrolled
 *   through one replica joins every other without a lookup per connection.
 */
export class RevocationFollower {
  readonly #cursor: TokenChangeCursor;
  readonly #subscribers = new Set<(tokenIds: readonly string[]) => void>();
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(
    db: Queryable,
    private readonly tokens: TokenIndex,
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {
    this.#cursor = new TokenChangeCursor(db);
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

  /** One round: new tokens to the index; revocations since the last round to the index, then to the subscribers. */
  async check(): Promise<void> {
    const { created, revoked } = await this.#cursor.next();
    for (const { hash, token } of created) this.tokens.add(hash, token);
    if (revoked.length === 0) return;
    this.tokens.revoke(revoked);
    for (const s of this.#subscribers) s(revoked);
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }
}
