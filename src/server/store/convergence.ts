import { jsonColumn, type Queryable } from '../db/index.js';
import type { Convergence } from '../../protocol/index.js';
import { notFound } from '../errors.js';

/** Most devices `not_converged` lists. */
export const NOT_CONVERGED_LIMIT = 1000;

interface ConvergenceRow {
  head_revision: unknown;
  devices: unknown;
  at_head: unknown;
  behind: unknown;
  error: unknown;
  stale: unknown;
  online: unknown;
  not_converged: unknown;
}

interface NotConvergedRow {
  id: string;
  hostname: string | null;
  applied_revision: number | string | null;
  apply_error: string | null;
  last_seen: string | null;
}

/**
 * The fleet's convergence (docs/protocol.md "Fleet convergence") in one
 * statement, counted by the database: each device once, in the first of
 * stale, error, at_head, behind that applies; a connected device is never
 * stale. `not_converged` lists up to 1000 of the others than at_head, oldest
 * object revision first. 404 when the organization doesn't exist.
 */
export async function convergence(q: Queryable, orgId: string, staleAfterSeconds: number): Promise<Convergence> {
  const rows = await q.query<ConvergenceRow & Record<string, unknown>>(
    `WITH g AS (SELECT head_revision FROM orgs WHERE id = $1 AND deleted_at IS NULL),
     -- Materialized: inlined into c, each device's presence test ran once per reference to it.
     d AS MATERIALIZED (
       SELECT o.id, o.revision, o.value->>'hostname' AS hostname,
              (s.status->>'applied_revision')::bigint AS applied_revision,
              s.status->>'apply_error' AS apply_error,
              s.last_seen,
              COALESCE(s.reported_online AND s.last_seen > now() - make_interval(secs => $2), false) AS reported,
              -- Uncorrelated, so one hashed set of the live replicas' presence, not a lookup per device.
              o.id IN (SELECT p.device_id FROM device_presence p JOIN replicas r ON r.id = p.replica_id
                        WHERE r.lease_expires_at > now()) AS connected
         FROM objects o LEFT JOIN device_status s ON s.device_id = o.id
        WHERE o.org_id = $1 AND o.kind = 'device' AND NOT o.deleted
     ),
     c AS (
       SELECT d.*, (connected OR reported) AS online,
              CASE WHEN NOT connected AND (last_seen IS NULL OR last_seen <= now() - make_interval(secs => $2)) THEN 'stale'
                   WHEN apply_error IS NOT NULL THEN 'error'
                   WHEN applied_revision = (SELECT head_revision FROM g) THEN 'at_head'
                   ELSE 'behind' END AS state
         FROM d
     )
     SELECT g.head_revision,
            count(c.id) AS devices,
            count(c.id) FILTER (WHERE c.state = 'at_head') AS at_head,
            count(c.id) FILTER (WHERE c.state = 'behind') AS behind,
            count(c.id) FILTER (WHERE c.state = 'error') AS error,
            count(c.id) FILTER (WHERE c.state = 'stale') AS stale,
            count(c.id) FILTER (WHERE c.online) AS online,
            (SELECT COALESCE(json_agg(x), '[]'::json) FROM (
               SELECT id, hostname, applied_revision, apply_error,
                      CASE WHEN connected THEN now() ELSE last_seen END AS last_seen
                 FROM c WHERE state <> 'at_head' ORDER BY revision LIMIT ${NOT_CONVERGED_LIMIT}) x) AS not_converged
       FROM g LEFT JOIN c ON true
      GROUP BY g.head_revision`,
    [orgId, staleAfterSeconds],
  );
  const row = rows[0];
  if (!row) throw notFound('organization');
  const list = jsonColumn<NotConvergedRow[]>(row.not_converged);
  return {
    revision: Number(row.head_revision),
    devices: Number(row.devices),
    at_head: Number(row.at_head),
    behind: Number(row.behind),
    error: Number(row.error),
    stale: Number(row.stale),
    online: Number(row.online),
    not_converged: list.map((d) => ({
      id: d.id,
      hostname: d.hostname ?? '',
      applied_revision: d.applied_revision === null ? null : Number(d.applied_revision),
      apply_error: d.apply_error,
      last_seen: d.last_seen === null ? null : new Date(d.last_seen).toISOString(),
    })),
  };
}
