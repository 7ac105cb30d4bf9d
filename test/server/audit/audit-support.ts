import { paths, type AuditEntry, type AuditList } from '../../../src/protocol/index.js';
import type { Harness } from '../fixtures.js';

/** Every audit entry of `org` (or of the server with `org` undefined), oldest first, read straight from the table. */
export async function auditRows(h: Harness, org?: string): Promise<{ action: string; kind: string; object_id: string | null; actor_type: string; actor_id: string | null; credential_id: string | null; revision: string | number | null; source: string | null; user_agent: string | null; details: Record<string, unknown> }[]> {
  return h.server.db.query(
    `SELECT action, kind, object_id, actor_type, actor_id, credential_id, revision, source, user_agent, details
       FROM audit_log WHERE ($1::uuid IS NULL OR org_id = $1::uuid) ORDER BY id`,
    [org ?? null],
  );
}

export async function auditCount(h: Harness): Promise<number> {
  const rows = await h.server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_log');
  return Number(rows[0]?.n ?? 0);
}

/** One page of `GET /api/organizations/{org}/audit` as the admin token. */
export function auditPage(h: Harness, org: string, query: Record<string, string> = {}): Promise<AuditList> {
  return h.ok<AuditList>(200, 'GET', paths.orgAudit(org), { query });
}

export type { AuditEntry };
