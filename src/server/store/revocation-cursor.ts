import type { Queryable } from '../db/index.js';
import { revokedTokensSince } from './credentials.js';

/** Revocations are looked up with this much overlap, so one committed late isn't missed. */
const OVERLAP_MS = 60_000;

/**
 * Follows token revocations for whoever holds long-lived connections opened
 * with a token (watch streams, agent tunnels). Each `next()` returns the ids
 * of tokens revoked since the previous call, as the database's clock sees
 * it, with an overlap: an id may come back more than once, never missed.
 */
export class RevocationCursor {
  #checkedAt: Date | undefined;

  constructor(private readonly db: Queryable) {}

  async next(): Promise<string[]> {
    const since = new Date((this.#checkedAt?.getTime() ?? Date.now()) - OVERLAP_MS);
    const { ids, now } = await revokedTokensSince(this.db, since);
    this.#checkedAt = now;
    return ids;
  }

  /** Nothing to follow for now: the next `next()` starts from the present again. */
  reset(): void {
    this.#checkedAt = undefined;
  }
}
