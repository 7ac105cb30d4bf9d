import type { IndexedToken, TokenIndex } from './token-index.js';

/**
 * What one write changes in the token index, as data: the tokens it
 * created, revoked or re-timed. Applied by `afterCommit` only once the
 * write's transaction committed (TokenIndex.apply), never from inside it.
 */
export interface TokenIndexChange {
  /** Tokens the write revoked, by id. */
  readonly revoked?: readonly string[] | undefined;
  /** A device the write deleted: every token of it is revoked. */
  readonly deviceDeleted?: string | undefined;
  /** An organization the write deleted: every token in it is revoked. */
  readonly orgDeleted?: string | undefined;
  /** Tokens whose expiry the write moved earlier (a device renewed them away). */
  readonly shortened?: readonly { readonly tokenId: string; readonly expiresAt: number }[] | undefined;
  /** Sessions whose idle end the write moved later. */
  readonly extended?: readonly { readonly tokenId: string; readonly expiresAt: number }[] | undefined;
  /** Tokens whose makers the write changed: dropped from the index, looked up again at their next use. */
  readonly forgotten?: readonly string[] | undefined;
  /** Tokens the write created, valid from its commit. */
  readonly added?: readonly { readonly hash: string; readonly token: IndexedToken }[] | undefined;
}

/**
 * The after-commit step of a write that creates, revokes or re-times
 * tokens: waits for `write` (which resolves once its transaction
 * committed), then applies `change(result)` to `index`, and returns the
 * result. A write that throws changes nothing in the index, and the index
 * never knows a token before the database does.
 */
export async function afterCommit<T>(index: TokenIndex, write: Promise<T>, change: (result: T) => TokenIndexChange): Promise<T> {
  const result = await write;
  index.apply(change(result));
  return result;
}

/** A stored expiry (ISO 8601, null: none) as the token index keeps it (epoch ms, null: none). */
export const epochMs = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso));
