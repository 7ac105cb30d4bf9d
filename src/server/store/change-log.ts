import type { Database } from '../db/index.js';
import type { WatchKind } from '../../protocol/index.js';
import { readChanges, readHeads, readLive } from './changes.js';
import { compact } from './compaction.js';
import { listKind, type ListParams } from './objects.js';

/**
 * Every organization's objects by revision: the lists and change reads that
 * serve list and watch requests, and compaction of old changes. Members are
 * bound, so they may be passed as callbacks (and tests replace them).
 */
export class ChangeLog {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  /** One page of an organization's objects of a kind, at one revision (see objects.ts). */
  list = (orgId: string, kind: WatchKind, params: ListParams) => listKind(this.#db, orgId, kind, params);
  /** At most `limit` changes after revision `after`, of `kinds` only when given (see changes.ts). */
  read = (orgId: string, after: number, limit: number, kinds?: readonly WatchKind[]) => readChanges(this.#db, orgId, after, limit, kinds);
  /** The newest revision of each of these organizations. */
  heads = (orgIds: readonly string[]) => readHeads(this.#db, orgIds);
  /** An organization's live objects with their revisions (see changes.ts LiveObjects). */
  live = (orgId: string) => readLive(this.#db, orgId);
  /** Drops changes older than `retentionSeconds` (see compaction.ts). */
  compact = (retentionSeconds: number) => compact(this.#db, retentionSeconds);
}
