import { AUDIT_REDACTED, auditChanges, isAuditTruncated, type AuditEntry } from '../../protocol/wire.js';

/** Longest value shown in a table cell; -o json has it whole. */
const SHOWN_VALUE_MAX = 60;

/** One recorded value as a person reads it: plain words bare, the rest as JSON, long ones cut. */
export function shownValue(v: unknown): string {
  if (v === AUDIT_REDACTED) return v;
  if (isAuditTruncated(v)) return `(${v.bytes} bytes, not kept)`;
  if (v === null) return 'null';
  const text = typeof v === 'string' && /^[^\s",:→]+$/.test(v) ? v : JSON.stringify(v);
  return text.length > SHOWN_VALUE_MAX ? `${text.slice(0, SHOWN_VALUE_MAX - 1)}…` : text;
}

/**
 * The CHANGES cell: `name: web-1 → web-2, description: "" → lab`; for an
 * update recorded before values were (v1.18), the changed fields' names;
 * `-` for entries that change no fields.
 */
export function changesCell(e: AuditEntry): string {
  const changes = auditChanges(e.details);
  if (changes.length > 0) return changes.map(([field, c]) => `${field}: ${shownValue(c.from)} → ${shownValue(c.to)}`).join(', ');
  const fields = e.details['fields'];
  return Array.isArray(fields) && fields.length > 0 ? fields.map(String).join(', ') : '-';
}

/** The DETAILS cell: what the CHANGES cell does not already show. */
export function otherDetails(e: AuditEntry): Record<string, unknown> | undefined {
  const { fields: _fields, changes: _changes, ...rest } = e.details;
  return Object.keys(rest).length > 0 ? rest : undefined;
}
