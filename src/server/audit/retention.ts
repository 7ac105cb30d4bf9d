import type { Database } from '../db/index.js';

/** Arbitrary constant shared by every replica: the advisory lock of the audit retention. */
const RETENTION_LOCK = 7_317_420_083;

export interface RetentionRound {
  /** Entries deleted. */
  deleted: number;
  /** False when another replica held the lock (this one deleted nothing). */
  ran: boolean;
}

/**
 * Deletes audit entries older than `retentionSeconds` (0: keeps them for
 * ever), oldest first, in batches of `batchSize`, at most `maxBatches` per
 * round. Each batch is one transaction holding a transaction-scoped advisory
 * lock, tried without waiting: replicas sharing the database never delete
 * side by side, and one whose try fails leaves the round to the holder.
 */
export async function pruneAudit(
  db: Database,
  retentionSeconds: number,
  opts: { batchSize?: number; maxBatches?: number; signal?: AbortSignal } = {},
): Promise<RetentionRound> {
  const round: RetentionRound = { deleted: 0, ran: true };
  if (retentionSeconds <= 0) return round;
  const batchSize = opts.batchSize ?? 1000;
  const maxBatches = opts.maxBatches ?? 100;
  for (let i = 0; i < maxBatches && opts.signal?.aborted !== true; i++) {
    const n = await db.transaction(async (tx) => {
      const locked = await tx.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS ok', [RETENTION_LOCK]);
      if (locked[0]?.ok !== true) return undefined;
      const rows = await tx.query(
        `DELETE FROM audit_log WHERE id IN (
           SELECT id FROM audit_log WHERE at < now() - make_interval(secs => $1::float8) ORDER BY at LIMIT $2
         ) RETURNING id`,
        [retentionSeconds, batchSize],
      );
      return rows.length;
    });
    if (n === undefined) return { ...round, ran: false };
    round.deleted += n;
    if (n < batchSize) break;
  }
  return round;
}
