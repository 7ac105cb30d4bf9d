import type { Database } from '../db/index.js';
import type { AuditQuery } from '../../protocol/index.js';
import { insertAudit, listAudit, type AuditRecord, type AuditScope, type AuditSelection } from '../audit/index.js';
import type { Actor } from '../principal/index.js';

/**
 * The audit log. Writes record their own entries in their transaction;
 * this reads the log and records refused calls. Members are bound, so they
 * may be passed as callbacks.
 */
export class AuditRepository {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  /** One page of an organization's audit log, or the server's. */
  list = (selection: AuditSelection, query: AuditQuery) => listAudit(this.#db, selection, query);
  /** Records a refused call: an audit entry with its own actor, outside any write (audit/record.ts insertAudit). */
  recordDenied = (actor: Actor, where: Pick<AuditScope, 'source' | 'userAgent'>, entry: AuditRecord) => insertAudit(this.#db, actor, where, entry);
}
