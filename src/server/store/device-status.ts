import type { Queryable } from '../db/index.js';
import { EMPTY_STATUS, type DeviceStatus, type DeviceStatusInput, type PeerPath } from '../../protocol/index.js';

/**
 * A device's observed state as readers see it (docs/protocol.md "Device"):
 * `online` while the device holds a tunnel or a watch stream on a replica
 * whose lease is live (or its last PUT said online and it is not stale);
 * `last_seen` is the database's clock while it is connected, else the time
 * of its last report or disconnection.
 *
 * `$stale` is replaced by the parameter holding the stale setting (seconds);
 * `dev` is the device id expression, `s` the joined `device_status` row.
 */
export function statusColumns(dev: string, stale: string): string {
  const connected = `EXISTS (SELECT 1 FROM device_presence p JOIN replicas r ON r.id = p.replica_id
                      WHERE p.device_id = ${dev} AND r.lease_expires_at > now())`;
  return `s.status, s.peers, s.peers_truncated, ${connected} AS connected,
          COALESCE(s.reported_online AND s.last_seen > now() - make_interval(secs => ${stale}), false) AS reported,
          s.last_seen, now() AS db_now`;
}

export type StatusRow = {
  /** The stored report (StoredStatus; older rows may lack fields, which read as EMPTY_STATUS's). */
  status: Partial<DeviceStatus> | null;
  /** Null: the device reported no peers (or has no status row). */
  peers: PeerPath[] | null;
  peers_truncated: boolean | null;
  connected: boolean;
  reported: boolean;
  last_seen: unknown;
  db_now: unknown;
};

function iso(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  return new Date(v as string | number | Date).toISOString();
}

export function effectiveStatus(row: StatusRow): DeviceStatus {
  const base = row.status ?? EMPTY_STATUS;
  return {
    ...EMPTY_STATUS,
    ...base,
    online: row.connected || row.reported,
    last_seen: row.connected ? iso(row.db_now) : iso(row.last_seen),
    peers: row.peers ?? [],
    peers_truncated: row.peers_truncated ?? false,
  };
}

/** Effective statuses of many devices at once (lists, GET); every id gets one. */
export async function statusesOf(q: Queryable, ids: readonly string[], staleAfterSeconds: number): Promise<Map<string, DeviceStatus>> {
  if (ids.length === 0) return new Map();
  const rows = await q.query<StatusRow & { id: string }>(
    `SELECT d.id, ${statusColumns('d.id', '$2')}
       FROM unnest($1::uuid[]) AS d(id) LEFT JOIN device_status s ON s.device_id = d.id`,
    [ids, staleAfterSeconds],
  );
  return new Map(rows.map((r) => [r.id, effectiveStatus(r)]));
}

/** One device's status to record: from a `PUT` (its `online` is kept) or a tunnel frame (liveness is the tunnel). */
export interface StatusWrite {
  readonly deviceId: string;
  readonly orgId: string;
  readonly input: DeviceStatusInput;
  readonly via: 'put' | 'tunnel';
}

/**
 * The statuses of a batch that did not go as asked: not recorded, or
 * recorded without changing anything, so that a fleet's batch of ACKs
 * returns no rows. A status in neither set was recorded and changed its
 * device's applied revision or error (a new ACK or NACK).
 */
export interface StatusBatchExceptions {
  /** Devices whose status was not recorded: the device is gone. */
  readonly gone: ReadonlySet<string>;
  /** Devices whose status was recorded and repeated the stored applied revision and error. */
  readonly repeated: ReadonlySet<string>;
}

/** What one batch writes: statuses, and this replica's presence changes. */
export interface StatusBatch {
  readonly replicaId: string;
  readonly statuses: readonly StatusWrite[];
  /** Devices whose first connection on this replica opened. */
  readonly connected: readonly string[];
  /** Devices whose last connection on this replica closed: their `last_seen` becomes now. */
  readonly disconnected: readonly string[];
  /**
   * By position in `statuses`: the status this writer last recorded for
   * that device, when it knows the database still holds it (undefined, or
   * past the array's end: the stored one is read). A known one decides
   * `repeated` here instead of being read back: reading a fleet's 10,000
   * stored statuses was a third of the batch statement's time.
   */
  readonly lastWritten?: readonly (DeviceStatusInput | undefined)[];
}

/** Whether `next` repeats `stored`'s applied revision and error (both required: the batcher's inputs passed the schema). */
function repeats(stored: DeviceStatusInput, next: DeviceStatusInput): boolean {
  return stored.applied_revision === next.applied_revision && stored.apply_error === next.apply_error;
}

/**
 * The stored form of a status (the `status` column): the report's fields; `online` and `last_seen`
 * are derived when read, and peers are kept in columns of their own.
 */
type StoredStatus = Omit<DeviceStatus, 'online' | 'last_seen' | 'peers' | 'peers_truncated'>;

function stored(input: DeviceStatusInput): StoredStatus {
  return {
    applied_revision: input.applied_revision,
    apply_error: input.apply_error,
    local_endpoints: input.local_endpoints,
    os: input.os,
    agent_version: input.agent_version,
  };
}

const EMPTY_STORED = JSON.stringify(stored({ ...EMPTY_STATUS, last_seen: undefined }));

/**
 * Writes a batch in one statement (data-modifying CTEs): the statuses of
 * devices that still exist, presence rows in and out (only while this
 * replica is registered: a replica collected after its lease expired
 * re-asserts its presence when it registers again), and `last_seen` of the
 * devices that went away. Every status row it writes, and this replica's
 * row when its presence changed, carry the writing transaction's id: what
 * a convergence view's next read fetches (convergence-view.ts). Returns the statuses not recorded (a deleted
 * device's) and those that repeated the stored applied revision and error (as `lastWritten` says, where it knows).
 */
export async function writeStatusBatch(q: Queryable, batch: StatusBatch): Promise<StatusBatchExceptions> {
  const reported = new Set(batch.statuses.map((s) => s.deviceId));
  const seen = batch.disconnected.filter((id) => !reported.has(id));
  const known = batch.lastWritten ?? [];
  const records = batch.statuses.map((s, i) => ({
    id: s.deviceId,
    known: known[i] !== undefined,
    org: s.orgId,
    status: stored(s.input),
    online: s.via === 'put' ? s.input.online ?? true : false,
    // Absent (agents before v1.9) or empty: NULL, which reads as no peers.
    peers: s.input.peers !== undefined && s.input.peers.length > 0 ? s.input.peers : null,
    peers_truncated: s.input.peers_truncated ?? false,
  }));
  const rows = await q.query<{ device_id: string; recorded: boolean }>(
    // The report set is materialized once and joined by hash: an inlined
    // recordset on the inner side of a nested loop was rescanned per row
    // (10,000 statuses took 15 s of database time).
    `WITH v AS MATERIALIZED (
       SELECT * FROM jsonb_to_recordset($1::text::jsonb) AS v(id uuid, org uuid, known boolean, status jsonb, online boolean, peers jsonb, peers_truncated boolean)
     ), prev AS MATERIALIZED (
       -- Every part of one statement sees the rows as they were before it: the statuses st replaces (those the writer doesn't know).
       SELECT s.device_id, s.status->'applied_revision' AS applied, s.status->'apply_error' AS failed
         FROM device_status s JOIN v ON s.device_id = v.id WHERE NOT v.known
     ), st AS (
       INSERT INTO device_status (device_id, org_id, status, last_seen, reported_online, peers, peers_truncated)
       SELECT o.id, o.org_id, v.status, now(), v.online, v.peers, v.peers_truncated
         FROM v JOIN objects o ON o.id = v.id AND o.org_id = v.org AND o.kind = 'device' AND NOT o.deleted
       ON CONFLICT (device_id) DO UPDATE
         SET status = EXCLUDED.status, last_seen = EXCLUDED.last_seen, reported_online = EXCLUDED.reported_online,
             peers = EXCLUDED.peers, peers_truncated = EXCLUDED.peers_truncated, xid = pg_current_xact_id()
       RETURNING device_id, status->'applied_revision' AS applied, status->'apply_error' AS failed
     ), came AS (
       INSERT INTO device_presence (device_id, replica_id)
       SELECT d, $2 FROM unnest($3::uuid[]) AS d WHERE EXISTS (SELECT 1 FROM replicas WHERE id = $2)
       ON CONFLICT DO NOTHING
     ), went AS (
       DELETE FROM device_presence WHERE replica_id = $2 AND device_id = ANY($4::uuid[])
     ), moved AS (
       UPDATE replicas SET presence_xid = pg_current_xact_id()
        WHERE id = $2 AND (cardinality($3::uuid[]) > 0 OR cardinality($4::uuid[]) > 0)
     ), gone AS (
       INSERT INTO device_status (device_id, org_id, status, last_seen, reported_online)
       SELECT o.id, o.org_id, $5::text::jsonb, now(), false FROM objects o
        WHERE o.id = ANY($6::uuid[]) AND o.kind = 'device' AND NOT o.deleted
       ON CONFLICT (device_id) DO UPDATE SET last_seen = now(), xid = pg_current_xact_id()
     )
     -- Only the exceptions: the rows of 10,000 ACKs would be sent and parsed to say that all went as asked.
     SELECT v.id AS device_id, st.device_id IS NOT NULL AS recorded
       FROM v LEFT JOIN st ON st.device_id = v.id LEFT JOIN prev p ON p.device_id = v.id
      WHERE st.device_id IS NULL
         OR (p.device_id IS NOT NULL AND p.applied IS NOT DISTINCT FROM st.applied AND p.failed IS NOT DISTINCT FROM st.failed)`,
    [JSON.stringify(records), batch.replicaId, [...batch.connected], [...batch.disconnected], EMPTY_STORED, seen],
  );
  const gone = new Set<string>();
  const repeated = new Set<string>();
  for (const r of rows) (r.recorded === true ? repeated : gone).add(r.device_id);
  batch.statuses.forEach((s, i) => {
    const stored = known[i];
    if (stored !== undefined && !gone.has(s.deviceId) && repeats(stored, s.input)) repeated.add(s.deviceId);
  });
  return { gone, repeated };
}

/** Removes every presence row of this replica (it starts, or re-registers after its row was collected, with none). */
export async function clearPresence(q: Queryable, replicaId: string): Promise<void> {
  await q.query(
    `WITH cleared AS (DELETE FROM device_presence WHERE replica_id = $1)
     UPDATE replicas SET presence_xid = pg_current_xact_id() WHERE id = $1`,
    [replicaId],
  );
}
