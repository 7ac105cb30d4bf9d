import type { AuditAction, AuditKind } from '../../protocol/index.js';
import type { Queryable } from '../db/index.js';
import type { Actor } from '../principal/index.js';
import { redactText } from './changes.js';
import { currentScope, type AuditScope } from './scope.js';

/** One change, as its writer describes it; who made it comes from the audit scope. */
export interface AuditRecord {
  /** The organization whose log it belongs to; null outside any (a user's own API keys). */
  readonly orgId: string | null;
  readonly action: AuditAction;
  readonly kind: AuditKind;
  readonly objectId: string | null;
  /**
   * The object's name as it is after the change (before it, for a delete):
   * an organization's or group's name, a device's hostname (also for its
   * device tokens), a token's, registration key's, API key's or session's
   * description, a member's or user's email (else its name), an
   * invitation's email (else its subject). Omitted, null or empty: it has
   * none. An issued secret in it
   * is redacted, as in `details`.
   */
  readonly objectName?: string | null | undefined;
  /** The organization revision the change took; omitted for changes that take none (credentials). */
  readonly revision?: number | undefined;
  /** Small and never secret: e.g. an update's `fieldChanges` (changes.ts), the changed fields with their values redacted and bounded. */
  readonly details?: Readonly<Record<string, unknown>> | undefined;
  /**
   * Who made the change when the call's credential does not say (a login
   * creating its user's session: the user); the scope's source and user
   * agent are kept. Omitted: the scope's actor.
   */
  readonly actor?: Actor | undefined;
}

/** Thrown for a write made outside any audit scope: a bug, never a caller's mistake. */
export class MissingAuditScopeError extends Error {
  constructor(r: AuditRecord) {
    super(`audit: ${r.action} ${r.kind} ${r.objectId ?? ''} made outside any audit scope (no actor); run it under runAudited`);
    this.name = 'MissingAuditScopeError';
  }
}

/**
 * Records one change in `tx`, the transaction of the change itself: if
 * either fails, neither is kept. Call it from every write that changes
 * state, after the change. Throws outside an audit scope.
 */
export async function recordAudit(tx: Queryable, r: AuditRecord): Promise<void> {
  const scope = currentScope();
  if (scope === undefined) throw new MissingAuditScopeError(r);
  await insertAudit(tx, r.actor ?? (await scope.actor()), scope, r);
}

/** Inserts one entry with an explicit actor (denied attempts, which have no write of their own). */
export async function insertAudit(
  q: Queryable,
  actor: Actor,
  where: Pick<AuditScope, 'source' | 'userAgent'>,
  r: AuditRecord,
): Promise<void> {
  await q.query(
    `INSERT INTO audit_log (org_id, actor_type, actor_id, credential_id, action, kind, object_id, object_name, revision, source, user_agent, details)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::text::jsonb)`,
    [
      r.orgId,
      actor.type,
      actor.id,
      actor.credentialId,
      r.action,
      r.kind,
      r.objectId,
      r.objectName === undefined || r.objectName === null || r.objectName === '' ? null : redactText(r.objectName),
      r.revision ?? null,
      where.source,
      where.userAgent,
      JSON.stringify(r.details ?? {}),
    ],
  );
}
