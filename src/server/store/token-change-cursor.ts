import type { Queryable } from '../db/index.js';
import { tokenChangesSince, type TokenChanges } from './credentials.js';

/** Revocations are looked up with this much overlap, so one committed late isn't missed. */
const REVOKED_OVERLAP_MS = 60_000;
/**
 * Creations are looked up with this much overlap. A token whose transaction
 * commits later than this after it began is missed, which costs nothing but
 * a lookup: an unknown token is always asked of the database. A longer
 * overlap would fetch every token of a fleet being enrolled again and again.
 */
const CREATED_OVERLAP_MS = 1_000;

/**
 * Follows the tokens table for the token index and whoever holds
 * long-lived connections opened with a token (watch streams, agent tunnels).
 * Each `next()` returns, as the database's clock sees it:
 * - the ids of tokens revoked or expired since the previous call, with an
 *   overlap: an id may come back more than once, never missed;
 * - tokens created since the previous call and valid now (the first call
 *   looks back as far as for revocations, to cover the time since the index
 *   was loaded).
 */
export class TokenChangeCursor {
  #checkedAt: Date | undefined;

  constructor(private readonly db: Queryable) {}

  async next(): Promise<TokenChanges> {
    const last = this.#checkedAt?.getTime();
    const revokedSince = new Date((last ?? Date.now()) - REVOKED_OVERLAP_MS);
    const createdSince = last === undefined ? revokedSince : new Date(last - CREATED_OVERLAP_MS);
    const changes = await tokenChangesSince(this.db, revokedSince, createdSince);
    this.#checkedAt = changes.now;
    return changes;
  }
}
