import {
  AUDIT_ACTOR_TYPES,
  AUDIT_PAGE_DEFAULT,
  type AuditActorType,
  type AuditEntry,
  type AuditList,
  type AuditQuery,
} from '../../protocol/index.js';
import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors.js';

/** Which entries a page reads: one organization's, or (server level) every one's or `organization`'s. */
export type AuditSelection = { readonly org: string } | { readonly server: true; readonly organization?: string | undefined };

type Row = {
  id: string | number;
  org_id: string | null;
  at: unknown;
  actor_type: AuditActorType;
  actor_id: string | null;
  credential_id: string | null;
  action: AuditEntry['action'];
  kind: AuditEntry['kind'];
  object_id: string | null;
  object_name: string | null;
  revision: string | number | null;
  source: string | null;
  user_agent: string | null;
  details: Record<string, unknown> | null;
};

function toEntry(r: Row): AuditEntry {
  return {
    id: String(r.id),
    organization_id: r.org_id,
    at: new Date(r.at as string).toISOString(),
    actor: { type: r.actor_type, id: r.actor_id, credential_id: r.credential_id },
    action: r.action,
    kind: r.kind,
    object_id: r.object_id,
    object_name: r.object_name,
    revision: r.revision === null ? null : Number(r.revision),
    source: r.source,
    user_agent: r.user_agent,
    details: r.details ?? {},
  };
}

/** `a<id>`: ascending after id; `d<id>`: descending before id. Opaque to clients. */
function decodeAfter(after: string): { asc: boolean; id: string } {
  const m = /^([ad])(\d{1,19})$/.exec(after);
  if (!m?.[1] || !m[2]) throw new ApiError('bad_request', 'invalid cursor in "after"', { path: '/after' });
  return { asc: m[1] === 'a', id: m[2] };
}

function parseActor(actor: string): { type: AuditActorType; id: string | undefined } {
  const i = actor.indexOf(':');
  const type = i < 0 ? actor : actor.slice(0, i);
  const known = AUDIT_ACTOR_TYPES.find((t) => t === type);
  if (known === undefined) throw new ApiError('bad_request', `actor type must be one of ${AUDIT_ACTOR_TYPES.join(', ')}`, { path: '/actor' });
  return { type: known, id: i < 0 ? undefined : actor.slice(i + 1) };
}

/**
 * One page of audit entries (docs/protocol.md "Audit log"): newest first,
 * or with `gt_revision` oldest first from that revision on. Filters combine
 * (all must match); the next page's cursor is given while the page is full,
 * and is read with the same filters.
 */
export async function listAudit(q: Queryable, sel: AuditSelection, query: AuditQuery): Promise<AuditList> {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (sql: (p: string) => string, value: unknown) => {
    params.push(value);
    where.push(sql(`$${params.length}`));
  };
  if ('org' in sel) add((p) => `org_id = ${p}::uuid`, sel.org);
  else if (sel.organization !== undefined) add((p) => `org_id = ${p}::uuid`, sel.organization);
  let asc = query.gt_revision !== undefined;
  if (query.after !== undefined) {
    const c = decodeAfter(query.after);
    asc = c.asc;
    add((p) => (c.asc ? `id > ${p}::bigint` : `id < ${p}::bigint`), c.id);
  }
  if (query.gt_revision !== undefined) add((p) => `revision > ${p}::bigint`, query.gt_revision);
  if (query.since !== undefined) add((p) => `at >= ${p}::timestamptz`, query.since);
  if (query.until !== undefined) add((p) => `at < ${p}::timestamptz`, query.until);
  if (query.actor !== undefined) {
    const a = parseActor(query.actor);
    add((p) => `actor_type = ${p}`, a.type);
    if (a.id !== undefined) add((p) => `actor_id = ${p}`, a.id);
  }
  if (query.object !== undefined) add((p) => `object_id = ${p}`, query.object);
  if (query.action !== undefined) add((p) => `action = ${p}`, query.action);
  if (query.kind !== undefined) add((p) => `kind = ${p}`, query.kind);
  const limit = query.limit ?? AUDIT_PAGE_DEFAULT;
  params.push(limit + 1);
  const rows = await q.query<Row>(
    `SELECT * FROM audit_log ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY id ${asc ? 'ASC' : 'DESC'} LIMIT $${params.length}`,
    params,
  );
  const items = rows.slice(0, limit).map(toEntry);
  const last = items[items.length - 1];
  return rows.length > limit && last !== undefined ? { items, next: `${asc ? 'a' : 'd'}${last.id}` } : { items };
}
