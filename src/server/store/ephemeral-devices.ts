import type { Queryable } from '../db/index.js';

export interface EphemeralCandidate {
  id: string;
  orgId: string;
}

/**
 * Ephemeral devices offline for longer than `offlineSeconds`, at most
 * `limit`, for the collector on replica `replicaId`, which gets them only
 * while it is the oldest replica with a live lease: of replicas sharing the
 * database, one collects at a time, without a lock of its own.
 *
 * Offline is the `online` of docs/protocol.md "Device": no connection on a
 * replica whose lease is live, and no fresh report of being online (within
 * `staleSeconds`). It has lasted since `last_seen`, or since the device was
 * created when it never reported.
 */
export async function ephemeralCandidates(
  q: Queryable,
  replicaId: string,
  offlineSeconds: number,
  staleSeconds: number,
  limit: number,
): Promise<EphemeralCandidate[]> {
  const rows = await q.query<{ id: string; org_id: string }>(
    `SELECT o.id, o.org_id FROM objects o
       JOIN orgs g ON g.id = o.org_id AND g.deleted_at IS NULL
       LEFT JOIN device_status s ON s.device_id = o.id
      WHERE o.kind = 'device' AND NOT o.deleted AND (o.value->>'ephemeral') = 'true'
        AND $1 = (SELECT id FROM replicas WHERE lease_expires_at > now() ORDER BY started_at, id LIMIT 1)
        AND NOT EXISTS (SELECT 1 FROM device_presence p JOIN replicas r ON r.id = p.replica_id
                         WHERE p.device_id = o.id AND r.lease_expires_at > now())
        AND NOT COALESCE(s.reported_online AND s.last_seen > now() - make_interval(secs => $3::float8), false)
        AND COALESCE(s.last_seen, (o.value->>'created_at')::timestamptz) < now() - make_interval(secs => $2::float8)
      ORDER BY o.id
      LIMIT $4`,
    [replicaId, offlineSeconds, staleSeconds, limit],
  );
  return rows.map((r) => ({ id: r.id, orgId: r.org_id }));
}
