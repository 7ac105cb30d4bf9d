import { paths, QUERY, type AuditAction, type AuditEntry, type AuditKind, type AuditList } from '../protocol/wire.js';
import type { CallOptions } from './collection.js';
import { isRecord } from './guards.js';
import type { HttpTransport } from './http-transport.js';

/** Which entries to read (all given filters must match). */
export interface AuditFilter {
  /** ISO 8601 times: entries at or after `since`, before `until`. */
  since?: string | undefined;
  until?: string | undefined;
  /** Only entries with a revision above this, oldest first (without it: newest first). */
  gtRevision?: number | undefined;
  /** `type` or `type:id`, e.g. `token:<id>`, `user:<id>`, `admin`. */
  actor?: string | undefined;
  /** An object id (the server matches ids only; `ctl audit --object` resolves a name to one first). */
  object?: string | undefined;
  action?: AuditAction | undefined;
  kind?: AuditKind | undefined;
  /** Entries per page (at most AUDIT_PAGE_MAX). */
  limit?: number | undefined;
}

/** Server level: also one organization's only. */
export interface ServerAuditFilter extends AuditFilter {
  organization?: string | undefined;
}

const isAuditList = (v: unknown): v is AuditList => isRecord(v) && Array.isArray(v['items']) && (v['next'] === undefined || typeof v['next'] === 'string');

function queryOf(f: ServerAuditFilter, after: string | undefined) {
  return {
    [QUERY.since]: f.since,
    [QUERY.until]: f.until,
    [QUERY.gtRevision]: f.gtRevision,
    [QUERY.actor]: f.actor,
    [QUERY.object]: f.object,
    [QUERY.action]: f.action,
    [QUERY.kind]: f.kind,
    [QUERY.limit]: f.limit,
    [QUERY.organization]: f.organization,
    [QUERY.after]: after,
  };
}

/**
 * The audit log (docs/protocol.md "Audit log"): `/api/organizations/{org}/audit`
 * (admins; read tokens and members where the organization grants it) and
 * `/api/audit` (the admin token: every organization and entries outside any).
 * Entries name their object (`object_name`, since v1.18) and an update's
 * values before and after (`details.changes`: read it with `auditChanges`
 * of the protocol module).
 */
export class AuditApi {
  constructor(private readonly transport: HttpTransport) {}

  /** One page; pass its `next` as `after` (with the same filter) for the following one. */
  page(org: string, filter: AuditFilter = {}, after?: string, opts: CallOptions = {}): Promise<AuditList> {
    return this.transport.json(
      { method: 'GET', path: paths.orgAudit(org), query: queryOf(filter, after), signal: opts.signal },
      isAuditList,
      'a page of audit entries',
    );
  }

  /** Every matching entry of an organization, page by page as the iteration asks for them. */
  entries(org: string, filter: AuditFilter = {}, opts: CallOptions = {}): AsyncIterable<AuditEntry> {
    return this.#iterate((after) => this.page(org, filter, after, opts));
  }

  /** One page of the server's log (admin token). */
  serverPage(filter: ServerAuditFilter = {}, after?: string, opts: CallOptions = {}): Promise<AuditList> {
    return this.transport.json(
      { method: 'GET', path: paths.audit(), query: queryOf(filter, after), signal: opts.signal },
      isAuditList,
      'a page of audit entries',
    );
  }

  /** Every matching entry of the server's log (admin token). */
  serverEntries(filter: ServerAuditFilter = {}, opts: CallOptions = {}): AsyncIterable<AuditEntry> {
    return this.#iterate((after) => this.serverPage(filter, after, opts));
  }

  async *#iterate(read: (after: string | undefined) => Promise<AuditList>): AsyncGenerator<AuditEntry> {
    let after: string | undefined;
    do {
      const page = await read(after);
      yield* page.items;
      after = page.next;
    } while (after !== undefined);
  }
}
