/**
 * The local HTTP API of `fleetplane sync`, the policy syncer (it keeps an
 * organization's policy document equal to a file or a URL). Served on
 * loopback by default: `POST /sync` takes no credential.
 *
 * - `POST /sync`: syncs now (read the source, compare with the server's
 *   document, PUT it when it differs); answers 200 `SyncResult` once that
 *   sync is over, whether it applied, found nothing to do, or failed.
 * - `GET /metrics`: the syncer's Prometheus metrics (SYNC_METRICS), in the
 *   text exposition format.
 */
export const SYNC_ROUTES = { sync: '/sync', metrics: '/metrics' } as const;

/**
 * 8723 rather than a Prometheus exporter's customary 9464, which
 * OpenTelemetry exporters hold on many hosts.
 */
export const SYNC_DEFAULT_PORT = 8723;
export const SYNC_DEFAULT_HOST = '127.0.0.1';

/**
 * Why a sync failed; the `reason` label of `fleetplane_sync_errors_total`:
 * `source` (unreadable), `invalid` (400 `policy_invalid`, or 409 `conflict`:
 * it drops a group devices name by id), `tests` (422 `policy_test_failed`),
 * `server` (any other answer, or none).
 */
export const SYNC_ERROR_REASONS = ['source', 'invalid', 'tests', 'server'] as const;
export type SyncErrorReason = (typeof SYNC_ERROR_REASONS)[number];

/** The syncer's metric names (docs: each one's help says what it counts). */
export const SYNC_METRICS = {
  /** Gauge: the organization revision the syncer's last successful PUT wrote or found. */
  lastAppliedRevision: 'fleetplane_sync_last_applied_revision',
  /** Counter: documents the syncer PUT successfully. */
  appliesTotal: 'fleetplane_sync_applies_total',
  /** Counter, label `reason` (SYNC_ERROR_REASONS): syncs that failed. */
  errorsTotal: 'fleetplane_sync_errors_total',
  /** Gauge: Unix time of the last sync that ended without error (applied or not). */
  lastSuccessTimestampSeconds: 'fleetplane_sync_last_success_timestamp_seconds',
  /** Gauge: 1 when the last source read gave a document the server took (or already had), 0 when it was unreadable, invalid or failed its tests. */
  sourceOk: 'fleetplane_sync_source_ok',
} as const;

/**
 * The answer to `POST /sync`. `applied`: this sync PUT the source's
 * document. `revision`: the organization revision its PUT wrote, else the
 * one of the last PUT of this process; null when it has made none.
 * `error`: why the sync failed (the server's document stays as it was).
 */
export interface SyncResult {
  applied: boolean;
  revision: number | null;
  error?: { reason: SyncErrorReason; message: string; code?: string; details?: Record<string, unknown> };
}
