/**
 * What an `update` or `approve` audit entry says changed (docs/protocol.md
 * "Audit log"): `details.changes`, per changed top-level field, its value
 * before and after. Browser-safe: the dashboard reads it as ctl does.
 */

/** Written instead of a value that is, or holds, a credential (a token, a key's secret, a hash). */
export const AUDIT_REDACTED = '[redacted]';

/**
 * Largest value kept in `details.changes`, in bytes of its JSON (UTF-8): a
 * longer `from` or `to` is replaced by an `AuditTruncated` marker.
 */
export const AUDIT_VALUE_MAX_BYTES = 4096;

/** Stands for a value longer than `AUDIT_VALUE_MAX_BYTES`: `bytes` is the length of its JSON. */
export interface AuditTruncated {
  readonly truncated: true;
  readonly bytes: number;
}

/**
 * One changed field. `from` and `to` are JSON values as stored (null for a
 * field that was or became absent), `AUDIT_REDACTED`, or an `AuditTruncated`.
 */
export interface AuditChange {
  readonly from: unknown;
  readonly to: unknown;
}

const isObject = (v: unknown): v is Readonly<Record<string, unknown>> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether `v` is the marker of a value too long to keep. */
export function isAuditTruncated(v: unknown): v is AuditTruncated {
  return isObject(v) && v['truncated'] === true && typeof v['bytes'] === 'number' && Object.keys(v).length === 2;
}

/**
 * The changes an entry's `details` records, by field name; empty for
 * entries without any (other actions, entries written before v1.18, which
 * name only the fields in `details.fields`).
 */
export function auditChanges(details: Readonly<Record<string, unknown>>): ReadonlyArray<readonly [field: string, change: AuditChange]> {
  const changes = details['changes'];
  if (!isObject(changes)) return [];
  const out: [string, AuditChange][] = [];
  for (const [field, change] of Object.entries(changes)) {
    if (isObject(change) && 'from' in change && 'to' in change) out.push([field, { from: change['from'], to: change['to'] }]);
  }
  // Stored as jsonb, whose key order is its own (shortest first): the reader sorts.
  return out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
