import type { Database, Queryable } from '../db/index.js';
import type { SignalBus } from '../bus/index.js';
import { orgSignal } from '../../protocol/index.js';
import { notFound } from '../errors.js';

/** A write transaction inside one organization. */
export interface OrgWrite {
  readonly tx: Queryable;
  readonly orgId: string;
  /**
   * Takes the organization's next revision. The first call locks the
   * organization's counter row until commit, so revisions of one organization
   * commit in order (ARCHITECTURE.md, "What each part keeps"). Later calls reuse that revision:
   * one write, one revision.
   */
  revision(): Promise<number>;
}

/**
 * Runs `fn` in a transaction of organization `orgId` (404 if it doesn't exist
 * or is deleted). If `fn` took a revision, the organization's watchers are
 * signalled: inside the transaction when the bus supports it, else after commit.
 */
export async function writeInOrg<T>(
  db: Database,
  bus: SignalBus,
  orgId: string,
  fn: (w: OrgWrite) => Promise<T>,
): Promise<T> {
  let taken: number | undefined;
  let signalled = false;
  const result = await db.transaction(async (tx) => {
    const w: OrgWrite = {
      tx,
      orgId,
      async revision() {
        if (taken !== undefined) return taken;
        const rows = await tx.query<{ head_revision: number }>(
          'UPDATE orgs SET head_revision = head_revision + 1 WHERE id = $1 AND deleted_at IS NULL RETURNING head_revision',
          [orgId],
        );
        const row = rows[0];
        if (!row) throw notFound('organization');
        taken = Number(row.head_revision);
        return taken;
      },
    };
    const out = await fn(w);
    if (taken !== undefined) signalled = await bus.notifyInTransaction(tx, orgSignal(orgId));
    return out;
  });
  if (taken !== undefined && !signalled) bus.notify(orgSignal(orgId));
  return result;
}

/** Fails with 404 unless the organization exists and isn't deleted. */
export async function requireOrg(q: Queryable, orgId: string): Promise<{ head: number; compacted: number }> {
  const rows = await q.query<{ head_revision: number; compacted_revision: number }>(
    'SELECT head_revision, compacted_revision FROM orgs WHERE id = $1 AND deleted_at IS NULL',
    [orgId],
  );
  const row = rows[0];
  if (!row) throw notFound('organization');
  return { head: Number(row.head_revision), compacted: Number(row.compacted_revision) };
}
