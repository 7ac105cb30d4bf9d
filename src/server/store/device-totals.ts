import type { Queryable } from '../db/index.js';
import type { Convergence } from '../../protocol/index.js';

/** Devices of every organization by convergence state, and how many are online (apart from the states). */
export type DeviceTotals = Pick<Convergence, 'at_head' | 'behind' | 'error' | 'stale' | 'online'>;

/** The states of DeviceTotals, as the `state` label of `fleetplane_devices` names them. */
export const DEVICE_TOTAL_STATES = ['at_head', 'behind', 'error', 'stale', 'online'] as const satisfies readonly (keyof DeviceTotals)[];

/**
 * Every live device of every organization counted as convergence.ts counts
 * one organization's (each in the first of stale, error, at_head, behind
 * that applies, against its own organization's head; online apart), in one
 * statement. Its cost grows with the number of devices: callers cache it.
 */
export async function deviceTotals(q: Queryable, staleAfterSeconds: number): Promise<DeviceTotals> {
  const rows = await q.query<Record<keyof DeviceTotals, unknown>>(
    `WITH d AS (
       SELECT g.head_revision,
              (s.status->>'applied_revision')::bigint AS applied_revision,
              s.status->>'apply_error' AS apply_error,
              s.last_seen,
              COALESCE(s.reported_online AND s.last_seen > now() - make_interval(secs => $1), false) AS reported,
              EXISTS (SELECT 1 FROM device_presence p JOIN replicas r ON r.id = p.replica_id
                       WHERE p.device_id = o.id AND r.lease_expires_at > now()) AS connected
         FROM objects o
         JOIN orgs g ON g.id = o.org_id AND g.deleted_at IS NULL
         LEFT JOIN device_status s ON s.device_id = o.id
        WHERE o.kind = 'device' AND NOT o.deleted
     ),
     c AS (
       SELECT (connected OR reported) AS online,
              CASE WHEN NOT connected AND (last_seen IS NULL OR last_seen <= now() - make_interval(secs => $1)) THEN 'stale'
                   WHEN apply_error IS NOT NULL THEN 'error'
                   WHEN applied_revision = head_revision THEN 'at_head'
                   ELSE 'behind' END AS state
         FROM d
     )
     SELECT count(*) FILTER (WHERE state = 'at_head') AS at_head,
            count(*) FILTER (WHERE state = 'behind') AS behind,
            count(*) FILTER (WHERE state = 'error') AS error,
            count(*) FILTER (WHERE state = 'stale') AS stale,
            count(*) FILTER (WHERE online) AS online
       FROM c`,
    [staleAfterSeconds],
  );
  const row = rows[0];
  return {
    at_head: Number(row?.at_head ?? 0),
    behind: Number(row?.behind ?? 0),
    error: Number(row?.error ?? 0),
    stale: Number(row?.stale ?? 0),
    online: Number(row?.online ?? 0),
  };
}
