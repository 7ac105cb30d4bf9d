import type { Queryable } from '../db/index.js';
import type { WatchKind } from '../../protocol/index.js';
import { ApiError, notFound } from '../errors.js';
import { encodeCursor, decodeCursor } from './cursor.js';
import { HEADERS, parseEtag } from '../../protocol/index.js';

/** A stored object: the value every kind shares. */
export interface StoredValue {
  id: string;
  revision: number;
  [key: string]: unknown;
}

/** One row of the change log: a live object or a tombstone, at its latest revision. */
export interface ChangeRow {
  kind: WatchKind;
  id: string;
  revision: number;
  deleted: boolean;
  value: StoredValue;
  /** The revision its latest write replaced, when the read asked for it and the write recorded it (updates since v1.11). */
  previousRevision?: number;
}

export function toChangeRow(r: Record<string, unknown>): ChangeRow {
  return {
    kind: r['kind'] as WatchKind,
    id: r['id'] as string,
    revision: Number(r['revision']),
    deleted: r['deleted'] === true,
    value: r['value'] as StoredValue,
    ...(r['prev_revision'] === null || r['prev_revision'] === undefined ? {} : { previousRevision: Number(r['prev_revision']) }),
  };
}

/** Reads one live object and locks its row until the transaction ends. */
export async function lockObject<T extends StoredValue>(tx: Queryable, orgId: string, kind: WatchKind, id: string): Promise<T> {
  const rows = await tx.query<{ value: T }>(
    'SELECT value FROM objects WHERE id = $1 AND org_id = $2 AND kind = $3 AND NOT deleted FOR UPDATE',
    [id, orgId, kind],
  );
  const row = rows[0];
  if (!row) throw notFound(kind);
  return row.value;
}

export async function getObject<T extends StoredValue>(q: Queryable, orgId: string, kind: WatchKind, id: string): Promise<T | undefined> {
  const rows = await q.query<{ value: T }>(
    'SELECT o.value FROM objects o JOIN orgs g ON g.id = o.org_id WHERE o.id = $1 AND o.org_id = $2 AND o.kind = $3 AND NOT o.deleted AND g.deleted_at IS NULL',
    [id, orgId, kind],
  );
  return rows[0]?.value;
}

export async function insertObject(tx: Queryable, orgId: string, kind: WatchKind, value: StoredValue): Promise<void> {
  await tx.query('INSERT INTO objects (id, org_id, kind, revision, value) VALUES ($1, $2, $3, $4, $5::text::jsonb)', [
    value.id,
    orgId,
    kind,
    value.revision,
    JSON.stringify(value),
  ]);
}

export async function updateObject(tx: Queryable, value: StoredValue): Promise<void> {
  // prev_revision: the revision this write replaces (right-hand sides read the row before the update).
  await tx.query('UPDATE objects SET prev_revision = revision, revision = $2, value = $3::text::jsonb, changed_at = now() WHERE id = $1', [
    value.id,
    value.revision,
    JSON.stringify(value),
  ]);
}

/** Replaces a live object by its tombstone: its last state, at the revision of the delete. */
export async function tombstoneObject(tx: Queryable, last: StoredValue, revision: number): Promise<void> {
  const value = { ...last, revision };
  await tx.query('UPDATE objects SET revision = $2, value = $3::text::jsonb, deleted = true, changed_at = now() WHERE id = $1', [
    last.id,
    revision,
    JSON.stringify(value),
  ]);
}

/** Throws 412 when an `If-Match` header is given and doesn't name `revision`. */
export function checkIfMatch(ifMatch: string | undefined, revision: number): void {
  if (ifMatch === undefined || ifMatch.trim() === '*') return;
  const wanted = parseEtag(ifMatch);
  if (wanted === undefined) throw new ApiError('bad_request', 'If-Match must be "<revision>"', { path: HEADERS.ifMatch });
  if (wanted !== revision) {
    throw new ApiError('precondition_failed', `If-Match "${wanted}" does not match the current revision ${revision}`, {
      revision,
    });
  }
}

export interface ListParams {
  gt_revision?: number | undefined;
  limit?: number | undefined;
  after?: string | undefined;
}

export interface ListPage {
  rows: ChangeRow[];
  /** The organization revision this page is consistent with. */
  revision: number;
  next?: string;
}

/**
 * Lists one kind by revision (docs/protocol.md "Lists"). Tombstones are included
 * when the listing has a starting point (`gt_revision`, or a cursor from a
 * listing that began at some head): an item deleted mid-listing reappears as
 * a tombstone, so a client reading to the end can't miss it.
 *
 * One SQL statement, so rows and head come from one snapshot.
 */
export async function listKind(q: Queryable, orgId: string, kind: WatchKind, params: ListParams): Promise<ListPage> {
  let after = 0;
  let since: number | null = null;
  if (params.after !== undefined) {
    ({ after, since } = decodeCursor(params.after));
  } else if (params.gt_revision !== undefined) {
    after = params.gt_revision;
    // 0: the client has nothing, so it needs no deletes (as on watch streams) and can't be behind compaction.
    since = params.gt_revision > 0 ? params.gt_revision : null;
  }
  const paged = params.limit !== undefined;
  const limit = params.limit ?? null;
  const rows = await q.query<Record<string, unknown>>(
    `SELECT g.head_revision, g.compacted_revision, x.kind, x.id, x.revision, x.deleted, x.value
       FROM orgs g
       LEFT JOIN LATERAL (
         SELECT o.kind, o.id, o.revision, o.deleted, o.value FROM objects o
          WHERE o.org_id = g.id AND o.kind = $2 AND o.revision > $3
            AND (NOT o.deleted OR ($4::bigint IS NOT NULL AND o.revision > $4::bigint))
          ORDER BY o.revision
          LIMIT $5
       ) x ON true
      WHERE g.id = $1 AND g.deleted_at IS NULL`,
    [orgId, kind, after, since, limit === null ? null : limit + 1],
  );
  const first = rows[0];
  if (!first) throw notFound('organization');
  const head = Number(first['head_revision']);
  const compacted = Number(first['compacted_revision']);
  if (since !== null && since < compacted) {
    throw new ApiError('revision_compacted', `revision ${since} is older than the compacted revision ${compacted}; list again from 0`, {
      compacted_revision: compacted,
    });
  }
  let items = rows.filter((r) => r['id'] !== null && r['id'] !== undefined).map(toChangeRow);
  let next: string | undefined;
  if (paged && limit !== null && items.length > limit) {
    items = items.slice(0, limit);
    const last = items[items.length - 1];
    next = encodeCursor({ after: last ? last.revision : after, since: since ?? head });
  }
  return { rows: items, revision: head, ...(next !== undefined ? { next } : {}) };
}
