import type { Queryable } from '../db/index.js';
import type { WatchKind } from '../../protocol/index.js';
import { toChangeRow, type ChangeRow } from './objects.js';

/** A page of an organization's change log and the counters it was read with. */
export interface ChangeBatch {
  rows: ChangeRow[];
  /** Head revision in the same snapshot: every change ≤ head is in `rows` or before `after`. */
  head: number;
  compacted: number;
  /** False when the organization's row is gone (compacted after its deletion). */
  exists: boolean;
  /** True when the organization was deleted; `rows` still carry its tombstones. */
  deleted: boolean;
}

/**
 * Changes (live objects and tombstones) with revision > `after`, oldest first,
 * at most `limit`, of the given kinds (all when undefined). One statement, so
 * `head` and `compacted` are consistent with the rows.
 */
export async function readChanges(
  q: Queryable,
  orgId: string,
  after: number,
  limit: number,
  kinds?: readonly WatchKind[],
): Promise<ChangeBatch> {
  const rows = await q.query<Record<string, unknown>>(
    `SELECT g.head_revision, g.compacted_revision, g.deleted_at, x.kind, x.id, x.revision, x.deleted, x.value, x.prev_revision
       FROM orgs g
       LEFT JOIN LATERAL (
         SELECT o.kind, o.id, o.revision, o.deleted, o.value, o.prev_revision FROM objects o
          WHERE o.org_id = g.id AND o.revision > $2 AND ($4::text[] IS NULL OR o.kind = ANY($4::text[]))
          ORDER BY o.revision
          LIMIT $3
       ) x ON true
      WHERE g.id = $1`,
    [orgId, after, limit, kinds ? [...kinds] : null],
  );
  const first = rows[0];
  if (!first) return { rows: [], head: 0, compacted: 0, exists: false, deleted: true };
  return {
    rows: rows.filter((r) => r['id'] !== null && r['id'] !== undefined).map(toChangeRow),
    head: Number(first['head_revision']),
    compacted: Number(first['compacted_revision']),
    exists: true,
    deleted: first['deleted_at'] !== null && first['deleted_at'] !== undefined,
  };
}

/** Head and compacted revisions of many live organizations in one query (the safety re-read); deleted ones are absent. */
export async function readHeads(q: Queryable, orgIds: readonly string[]): Promise<Map<string, { head: number; compacted: number }>> {
  if (orgIds.length === 0) return new Map();
  const rows = await q.query<{ id: string; head_revision: number; compacted_revision: number }>(
    'SELECT id, head_revision, compacted_revision FROM orgs WHERE id = ANY($1::uuid[]) AND deleted_at IS NULL',
    [[...orgIds]],
  );
  return new Map(rows.map((r) => [r.id, { head: Number(r.head_revision), compacted: Number(r.compacted_revision) }]));
}

/** Every live object of an organization and the counters, in one statement (a snapshot's build). */
export interface LiveObjects {
  rows: ChangeRow[];
  /** The head the rows are consistent with. */
  head: number;
  compacted: number;
  /** False when the organization is gone or deleted. */
  exists: boolean;
}

/** Live objects of one organization, oldest revision first, with the head of the same snapshot. */
export async function readLive(q: Queryable, orgId: string): Promise<LiveObjects> {
  const rows = await q.query<Record<string, unknown>>(
    `SELECT g.head_revision, g.compacted_revision, g.deleted_at, o.kind, o.id, o.revision, o.deleted, o.value
       FROM orgs g
       LEFT JOIN objects o ON o.org_id = g.id AND NOT o.deleted
      WHERE g.id = $1
      ORDER BY o.revision`,
    [orgId],
  );
  const first = rows[0];
  if (!first) return { rows: [], head: 0, compacted: 0, exists: false };
  const deleted = first['deleted_at'] !== null && first['deleted_at'] !== undefined;
  return {
    rows: rows.filter((r) => r['id'] !== null && r['id'] !== undefined).map(toChangeRow),
    head: Number(first['head_revision']),
    compacted: Number(first['compacted_revision']),
    exists: !deleted,
  };
}
