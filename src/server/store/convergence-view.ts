import { jsonColumn, type Queryable } from '../db/index.js';
import type { Convergence, StatusesItems, StatusSummary } from '../../protocol/index.js';
import { notFound } from '../errors.js';
import { convergence, NOT_CONVERGED_LIMIT } from './convergence.js';

/**
 * Most devices one view holds (about 300 bytes each, presence included:
 * 30 MB at the limit). An organization beyond it is counted by the
 * database on every read instead, as `GET .../convergence` is.
 */
export const CONVERGENCE_VIEW_MAX_DEVICES = 100_000;

/** What a view's last read fetched: the bound its tests check. */
export interface ConvergenceReadStats {
  /** Device objects read: all of them the first time, then those written since. */
  readonly devices: number;
  /** Status rows read: all of them the first time, then those written since. */
  readonly statuses: number;
  /** Replicas whose presence rows were read: those whose presence changed since. */
  readonly presenceReplicas: number;
  /** True when the organization is beyond the view's limit and was counted by the database. */
  readonly counted: boolean;
}

interface DeviceEntry {
  /** The map's key again: the counting loop walks values, not entries (an array per device per read). */
  readonly id: string;
  revision: number;
  hostname: string;
  applied: number | null;
  error: string | null;
  /** Microseconds since the epoch, the database's clock. */
  lastSeenUs: number | null;
  reportedOnline: boolean;
  /** Held by a live replica's presence. */
  connected: boolean;
  /** As counted by the last read (`online` of the convergence). */
  online: boolean;
  /** Read only while the view follows statuses (null otherwise). */
  os: string | null;
  agentVersion: string | null;
}

interface ReplicaPresence {
  readonly xid: string;
  readonly devices: ReadonlySet<string>;
  live: boolean;
}

type DeviceRow = [id: string, revision: number, deleted: boolean, hostname: string | null];
/** Column-wise, so a batch of 10,000 statuses parses into five arrays, not 10,000. */
type StatusColumns = [
  ids: string[],
  applied: (number | null)[],
  errors: (string | null)[],
  lastSeenUs: (number | null)[],
  reportedOnline: boolean[],
  /** Only while the view follows statuses. */
  os?: (string | null)[],
  agentVersion?: (string | null)[],
];
type ReplicaRow = [id: string, live: boolean, presenceXid: string, devices: string[] | null];

interface DeltaRow extends Record<string, unknown> {
  head_revision: unknown;
  compacted_revision: unknown;
  now_us: unknown;
  snapshot: unknown;
  devices: unknown;
  statuses: unknown;
  replicas: unknown;
}

// One statement, one snapshot: the devices written after the last head seen (all live ones when
// `$2` is 0), oldest revision first; the statuses last written by transactions the last snapshot
// (`$3`) did not see (all when it is empty); and the device ids of each replica whose presence
// changed (its presence_xid differs from the one known, `$4`). The snapshot and head are the next
// read's starting points. Visibility, not only the xmin: a long transaction anywhere in the
// cluster holds the xmin back.
const delta = (statuses: boolean): string => `
  WITH g AS (
    SELECT head_revision, compacted_revision, (extract(epoch FROM now()) * 1000000)::bigint AS now_us,
           pg_current_snapshot()::text AS snapshot
      FROM orgs WHERE id = $1 AND deleted_at IS NULL
  ), s AS (
    SELECT s.device_id, (s.status->>'applied_revision')::bigint AS applied, s.status->>'apply_error' AS error,
           (extract(epoch FROM s.last_seen) * 1000000)::bigint AS last_seen_us, s.reported_online${statuses ? `,
           s.status->>'os' AS os, s.status->>'agent_version' AS agent_version` : ''}
      FROM device_status s
     WHERE s.org_id = $1
       AND ($3 = '' OR (s.xid >= pg_snapshot_xmin($3::text::pg_snapshot) AND NOT pg_visible_in_snapshot(s.xid, $3::text::pg_snapshot)))
  )
  SELECT g.*,
    (SELECT json_agg(json_build_array(o.id, o.revision, o.deleted, o.value->>'hostname') ORDER BY o.revision)
       FROM objects o
      WHERE o.org_id = $1 AND o.kind = 'device' AND o.revision > $2 AND ($2 > 0 OR NOT o.deleted)) AS devices,
    (SELECT json_build_array(array_agg(device_id), array_agg(applied), array_agg(error), array_agg(last_seen_us), array_agg(reported_online)${statuses ? ', array_agg(os), array_agg(agent_version)' : ''})
       FROM s HAVING count(*) > 0) AS statuses,
    (SELECT json_agg(json_build_array(r.id, r.lease_expires_at > now(), r.presence_xid::text,
              CASE WHEN r.presence_xid::text IS DISTINCT FROM ($4::text::jsonb ->> r.id)
                   THEN (SELECT COALESCE(array_agg(p.device_id), '{}') FROM device_presence p WHERE p.replica_id = r.id) END))
       FROM replicas r) AS replicas
    FROM g`;
const DELTA = delta(false);
const DELTA_WITH_STATUSES = delta(true);

const iso = (us: number): string => new Date(Math.floor(us / 1000)).toISOString();

function summary(d: DeviceEntry): StatusSummary {
  return {
    id: d.id,
    online: d.online,
    last_seen: d.lastSeenUs === null ? null : iso(d.lastSeenUs),
    applied_revision: d.applied,
    apply_error: d.error,
    os: d.os,
    agent_version: d.agentVersion,
  };
}

/**
 * One organization's convergence (docs/protocol.md "Fleet convergence"),
 * kept in memory for the streams that follow it. Each read is one
 * statement that fetches only what changed since the previous read
 * (devices, statuses, presence), then counts in memory by the rules of
 * `convergence()`, with the database's clock; the answers are the same.
 * Reads must not overlap. Rejects with `not_found` when the organization
 * is gone.
 */
export class ConvergenceView {
  readonly #devices = new Map<string, DeviceEntry>();
  readonly #replicas = new Map<string, ReplicaPresence>();
  #revision = 0;
  #snapshot = '';
  #counted = false;
  #stats: ConvergenceReadStats = { devices: 0, statuses: 0, presenceReplicas: 0, counted: false };
  /** Whether reads follow each device's status summary (`followStatuses`). */
  #statuses = false;
  /** Devices whose summary changed since the last `takeStatusChanges` (bounded by the organization's devices). */
  readonly #changed = new Set<string>();
  /** Devices deleted since the last `takeStatusChanges` (each at most once until taken). */
  readonly #removed = new Set<string>();
  /** Reads since statuses were followed: 0 until the first, which read every device. */
  #statusReads = 0;

  constructor(
    private readonly orgId: string,
    private readonly staleAfterSeconds: number,
    private readonly maxDevices = CONVERGENCE_VIEW_MAX_DEVICES,
  ) {}

  get lastRead(): ConvergenceReadStats {
    return this.#stats;
  }

  /**
   * From the next read on, also follows each device's status summary (what
   * a page stream's `statuses` lines carry). The next read reads every
   * device again, since the view held no `os` or `agent_version` before.
   */
  followStatuses(): void {
    if (this.#statuses) return;
    this.#statuses = true;
    this.#statusReads = 0;
    this.#reset();
  }

  /** How many reads followed statuses: a caller waits for the first before `allStatuses`. */
  get statusReads(): number {
    return this.#statusReads;
  }

  /** Every device's summary as of the last read (empty for an organization the database counts). */
  allStatuses(): StatusSummary[] {
    const out: StatusSummary[] = [];
    for (const d of this.#devices.values()) out.push(summary(d));
    return out;
  }

  /** The summaries that changed and the devices deleted since the last call, by the reads in between; then forgets them. */
  takeStatusChanges(): StatusesItems {
    const items: StatusSummary[] = [];
    for (const id of this.#changed) {
      const d = this.#devices.get(id);
      if (d) items.push(summary(d));
    }
    const removed = [...this.#removed];
    this.#changed.clear();
    this.#removed.clear();
    return { items, removed };
  }

  async read(q: Queryable): Promise<Convergence> {
    if (this.#counted) {
      this.#stats = { devices: 0, statuses: 0, presenceReplicas: 0, counted: true };
      if (this.#statuses) this.#statusReads++;
      return convergence(q, this.orgId, this.staleAfterSeconds);
    }
    let row = await this.#fetch(q);
    if (this.#revision > 0 && Number(row.compacted_revision) > this.#revision) {
      // Tombstones up to the compacted revision are gone: deletes since the last read may be unseen.
      this.#reset();
      row = await this.#fetch(q);
    }
    // An aggregate over no rows is null.
    const devices = jsonColumn<DeviceRow[] | null>(row.devices) ?? [];
    const statuses = jsonColumn<StatusColumns | null>(row.statuses);
    const replicas = jsonColumn<ReplicaRow[] | null>(row.replicas) ?? [];
    this.#applyDevices(devices);
    if (this.#devices.size > this.maxDevices) {
      this.#counted = true;
      this.#reset();
      return this.read(q);
    }
    if (statuses) this.#applyStatuses(statuses);
    const presenceReplicas = this.#applyPresence(replicas);
    this.#revision = Number(row.head_revision);
    this.#snapshot = String(row.snapshot);
    this.#stats = { devices: devices.length, statuses: statuses?.[0].length ?? 0, presenceReplicas, counted: false };
    const value = this.#count(this.#revision, Number(row.now_us));
    if (this.#statuses) this.#statusReads++;
    return value;
  }

  async #fetch(q: Queryable): Promise<DeltaRow> {
    const known = Object.fromEntries([...this.#replicas].map(([id, r]) => [id, r.xid]));
    const rows = await q.query<DeltaRow>(this.#statuses ? DELTA_WITH_STATUSES : DELTA, [this.orgId, this.#revision, this.#snapshot, JSON.stringify(known)]);
    const row = rows[0];
    if (!row) throw notFound('organization');
    return row;
  }

  #reset(): void {
    // Read again from nothing: what is not read back was deleted meanwhile (the new-device path takes the rest back out).
    if (this.#statuses) for (const id of this.#devices.keys()) this.#removed.add(id);
    this.#devices.clear();
    this.#replicas.clear();
    this.#revision = 0;
    this.#snapshot = '';
  }

  // The map stays in revision order (rows come oldest first; a changed device moves to the end), so
  // the oldest not converged are the first met: no sort per read.
  #applyDevices(rows: readonly DeviceRow[]): void {
    for (const [id, revision, deleted, hostname] of rows) {
      const d = this.#devices.get(id);
      this.#devices.delete(id);
      if (deleted) {
        if (d && this.#statuses) {
          this.#changed.delete(id);
          this.#removed.add(id);
        }
        continue;
      }
      if (d) {
        d.revision = Number(revision);
        d.hostname = hostname ?? '';
        this.#devices.set(id, d);
      } else {
        if (this.#statuses) {
          this.#removed.delete(id);
          this.#changed.add(id);
        }
        this.#devices.set(id, {
          id,
          revision: Number(revision),
          hostname: hostname ?? '',
          applied: null,
          error: null,
          lastSeenUs: null,
          reportedOnline: false,
          connected: this.#held(id),
          online: false,
          os: null,
          agentVersion: null,
        });
      }
    }
  }

  #applyStatuses([ids, applied, errors, lastSeenUs, reportedOnline, os, agentVersion]: StatusColumns): void {
    // A status is written only for a device that exists in the writer's snapshot, which this one follows: no status is early.
    for (let i = 0; i < ids.length; i++) {
      const d = this.#devices.get(ids[i]!);
      if (!d) continue;
      const a = applied[i] ?? null;
      const seen = lastSeenUs[i] ?? null;
      d.applied = a === null ? null : Number(a);
      d.error = errors[i] ?? null;
      d.lastSeenUs = seen === null ? null : Number(seen);
      d.reportedOnline = reportedOnline[i] === true;
      if (os && agentVersion) {
        d.os = os[i] ?? null;
        d.agentVersion = agentVersion[i] ?? null;
        this.#changed.add(d.id);
      }
    }
  }

  /** Returns how many replicas' presence rows were read. */
  #applyPresence(rows: readonly ReplicaRow[]): number {
    const listed = new Set<string>();
    let read = 0;
    let moved = false;
    for (const [id, live, xid, devices] of rows) {
      listed.add(id);
      const known = this.#replicas.get(id);
      if (devices === null) {
        if (known && known.live !== live) {
          known.live = live;
          moved = true;
        }
        continue;
      }
      read++;
      moved = true;
      // Only this organization's devices: a device connects after it is created, so it is in the map by now.
      this.#replicas.set(id, { xid, live, devices: new Set(devices.filter((d) => this.#devices.has(d))) });
    }
    for (const id of this.#replicas.keys()) {
      if (listed.has(id)) continue;
      this.#replicas.delete(id);
      moved = true;
    }
    if (moved) for (const d of this.#devices.values()) d.connected = this.#held(d.id);
    return read;
  }

  #held(id: string): boolean {
    for (const r of this.#replicas.values()) if (r.live && r.devices.has(id)) return true;
    return false;
  }

  #count(head: number, nowUs: number): Convergence {
    const since = nowUs - Math.round(this.staleAfterSeconds * 1_000_000);
    const now = iso(nowUs);
    let atHead = 0;
    let behind = 0;
    let error = 0;
    let stale = 0;
    let online = 0;
    const notConverged: Convergence['not_converged'] = [];
    for (const d of this.#devices.values()) {
      const seen = d.lastSeenUs !== null && d.lastSeenUs > since;
      const isOnline = d.connected || (d.reportedOnline && seen);
      // Staleness and presence move `online` without a status write: a summary follows it too.
      if (isOnline !== d.online) {
        d.online = isOnline;
        if (this.#statuses) this.#changed.add(d.id);
      }
      if (isOnline) online++;
      if (!d.connected && !seen) stale++;
      else if (d.error !== null) error++;
      else if (d.applied === head) {
        atHead++;
        continue;
      } else behind++;
      if (notConverged.length < NOT_CONVERGED_LIMIT) {
        // Formatted here, for at most NOT_CONVERGED_LIMIT devices: every ACK moves last_seen.
        const lastSeen = d.connected ? now : d.lastSeenUs === null ? null : iso(d.lastSeenUs);
        notConverged.push({ id: d.id, hostname: d.hostname, applied_revision: d.applied, apply_error: d.error, last_seen: lastSeen });
      }
    }
    return { revision: head, devices: this.#devices.size, at_head: atHead, behind, error, stale, online, not_converged: notConverged };
  }
}
