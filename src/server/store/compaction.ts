import type { Queryable } from '../db/index.js';

export interface CompactionResult {
  tombstones: number;
  organizations: number;
}

/**
 * Removes tombstones older than the retention and raises each affected
 * organization's `compacted_revision` to the newest revision removed; then
 * drops deleted organizations whose own tombstone is gone and long-revoked
 * tokens. Watchers and lists asking for revisions below `compacted_revision`
 * get `revision_compacted`.
 */
export async function compact(q: Queryable, retentionSeconds: number): Promise<CompactionResult> {
  const rows = await q.query<{ orgs: number; tombstones: number }>(
    `WITH gone AS (
       DELETE FROM objects WHERE deleted AND changed_at < now() - make_interval(secs => $1)
       RETURNING org_id, revision
     ), per_org AS (
       SELECT org_id, max(revision) AS rev, count(*) AS n FROM gone GROUP BY org_id
     ), raised AS (
       UPDATE orgs g SET compacted_revision = GREATEST(g.compacted_revision, p.rev)
         FROM per_org p WHERE g.id = p.org_id RETURNING g.id
     )
     SELECT (SELECT count(*) FROM raised)::int AS orgs, (SELECT COALESCE(sum(n), 0) FROM per_org)::int AS tombstones`,
    [retentionSeconds],
  );
  await q.query(
    `DELETE FROM orgs g WHERE g.deleted_at IS NOT NULL AND g.deleted_at < now() - make_interval(secs => $1)
       AND NOT EXISTS (SELECT 1 FROM objects o WHERE o.id = g.id)`,
    [retentionSeconds],
  );
  await q.query('DELETE FROM tokens WHERE revoked_at < now() - make_interval(secs => $1)', [retentionSeconds]);
  return { tombstones: Number(rows[0]?.tombstones ?? 0), organizations: Number(rows[0]?.orgs ?? 0) };
}
