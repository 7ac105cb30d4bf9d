import type { TokenPrincipal } from '../principal/index.js';
import type { TokenIndexChange } from './token-index-change.js';

/** A principal a token hash resolves to, and until when (null: no expiry). */
export interface IndexedToken {
  readonly principal: Extract<TokenPrincipal, { tokenId: string }>;
  readonly expiresAt: number | null;
}

/**
 * Organization and device tokens known to be valid, by secret hash, so that
 * authenticating a connection costs no query (10,000 agents joining, or
 * coming back after a restart, would otherwise cost a query each, twice).
 *
 * Contract:
 * - Only valid tokens are entered: loaded at start, added when created on
 *   this replica, when the token follower sees them created on another
 *   (within `--revocation-check-interval`), or after a successful database
 *   lookup (a miss always asks the database, so a token created on another
 *   replica works at once).
 * - A write on this replica changes it only after its transaction committed,
 *   through one step (`apply`, by afterCommit in token-index-change.ts).
 * - A revoked token leaves it before its revocation is acted on: at once for
 *   revocations made on this replica, and for others when the revocation
 *   follower sees them (within `--revocation-check-interval`), before it
 *   ends the token's streams and tunnels.
 * - An expired entry is never returned.
 * - At most `limit` entries; past it new ones are not kept (they are looked
 *   up in the database each time).
 */
export class TokenIndex {
  readonly #byHash = new Map<string, IndexedToken>();
  readonly #hashOf = new Map<string, string>();

  constructor(readonly limit: number) {}

  get size(): number {
    return this.#byHash.size;
  }

  get(hash: string, now = Date.now()): IndexedToken['principal'] | undefined {
    const entry = this.#byHash.get(hash);
    if (!entry) return undefined;
    if (entry.expiresAt !== null && entry.expiresAt <= now) {
      this.#delete(hash, entry);
      return undefined;
    }
    return entry.principal;
  }

  add(hash: string, entry: IndexedToken): void {
    if (!this.#byHash.has(hash) && this.#byHash.size >= this.limit) return;
    this.#byHash.set(hash, entry);
    this.#hashOf.set(entry.principal.tokenId, hash);
  }

  /** Moves a known token's expiry earlier (a device renewed it away); unknown ids are ignored. */
  expireBy(tokenId: string, expiresAt: number): void {
    const hash = this.#hashOf.get(tokenId);
    const entry = hash === undefined ? undefined : this.#byHash.get(hash);
    if (hash === undefined || !entry) return;
    if (entry.expiresAt === null || expiresAt < entry.expiresAt) this.#byHash.set(hash, { ...entry, expiresAt });
  }

  /** Moves a known session's expiry later (refreshed on this replica); unknown ids are ignored. */
  extend(tokenId: string, expiresAt: number): void {
    const hash = this.#hashOf.get(tokenId);
    const entry = hash === undefined ? undefined : this.#byHash.get(hash);
    if (hash !== undefined && entry) this.#byHash.set(hash, { ...entry, expiresAt });
  }

  /**
   * Applies what one committed write changed (see afterCommit): revocations
   * first, then new expiries, then the tokens it created, so a write that
   * revokes old tokens and creates a new one (a login past its session
   * limit) leaves only the new one.
   */
  apply(change: TokenIndexChange): void {
    if (change.revoked !== undefined) this.revoke(change.revoked);
    if (change.forgotten !== undefined) this.revoke(change.forgotten);
    if (change.deviceDeleted !== undefined) this.revokeDevice(change.deviceDeleted);
    if (change.orgDeleted !== undefined) this.revokeOrg(change.orgDeleted);
    for (const s of change.shortened ?? []) this.expireBy(s.tokenId, s.expiresAt);
    for (const e of change.extended ?? []) this.extend(e.tokenId, e.expiresAt);
    for (const a of change.added ?? []) this.add(a.hash, a.token);
  }

  /** Drops revoked tokens by id. */
  revoke(tokenIds: Iterable<string>): void {
    for (const id of tokenIds) {
      const hash = this.#hashOf.get(id);
      const entry = hash === undefined ? undefined : this.#byHash.get(hash);
      if (hash !== undefined && entry) this.#delete(hash, entry);
      this.#hashOf.delete(id);
    }
  }

  /** Drops the tokens of a device (deleting it revokes them). */
  revokeDevice(deviceId: string): void {
    this.#revokeWhere((p) => p.type === 'device' && p.deviceId === deviceId);
  }

  /** Drops every token of an organization (deleting it revokes them). */
  revokeOrg(orgId: string): void {
    this.#revokeWhere((p) => 'orgId' in p && p.orgId === orgId);
  }

  #revokeWhere(match: (p: IndexedToken['principal']) => boolean): void {
    const ids: string[] = [];
    for (const e of this.#byHash.values()) if (match(e.principal)) ids.push(e.principal.tokenId);
    this.revoke(ids);
  }

  #delete(hash: string, entry: IndexedToken): void {
    this.#byHash.delete(hash);
    this.#hashOf.delete(entry.principal.tokenId);
  }
}
