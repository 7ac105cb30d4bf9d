import type { Queryable } from '../db/index.js';
import type { Convergence } from '../../protocol/index.js';
import { requireOrg } from './org-write.js';

const NOT_CONVERGED_LIMIT = 1000;

/**
 * The fleet's convergence (PROTOCOL.md "Fleet convergence"): each device is
 * counted once, in the first of stale, error, at_head, behind that applies;
 * `not_converged` lists up to 1000 of the others than at_head.
 */
export async function convergence(q: Queryable, orgId: string, staleAfterSeconds: number): Promise<Convergence> {
  const { head } = await requireOrg(q, orgId);
  const rows = await q.query<Record<string, unknown>>(
    `SELECT o.id, o.value->>'hostname' AS hostname,
            (s.status->>'applied_revision')::bigint AS applied_revision,
            s.status->>'apply_error' AS apply_error,
            s.last_seen,
            (s.last_seen IS NULL OR s.last_seen < now() - make_interval(secs => $2)) AS stale
       FROM objects o LEFT JOIN device_status s ON s.device_id = o.id
      WHERE o.org_id = $1 AND o.kind = 'device' AND NOT o.deleted
      ORDER BY o.revision`,
    [orgId, staleAfterSeconds],
  );
  const out: Convergence = { revision: head, devices: rows.length, at_head: 0, behind: 0, error: 0, stale: 0, online: 0, not_converged: [] };
  for (const r of rows) {
    const applied = r['applied_revision'] === null || r['applied_revision'] === undefined ? null : Number(r['applied_revision']);
    const applyError = (r['apply_error'] as string | null) ?? null;
    if (r['stale'] === true) out.stale++;
    else if (applyError !== null) out.error++;
    else if (applied === head) {
      out.at_head++;
      continue;
    } else out.behind++;
    if (out.not_converged.length < NOT_CONVERGED_LIMIT) {
      out.not_converged.push({
        id: r['id'] as string,
        hostname: (r['hostname'] as string) ?? '',
        applied_revision: applied,
        apply_error: applyError,
        last_seen: r['last_seen'] ? new Date(r['last_seen'] as string).toISOString() : null,
      });
    }
  }
  return out;
}
