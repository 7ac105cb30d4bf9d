import { AsyncLocalStorage } from 'node:async_hooks';
import { AUDIT_USER_AGENT_MAX } from '../../protocol/index.js';
import { SYSTEM_ACTOR, type Actor } from '../principal/index.js';

/**
 * Who is making the writes of the running call: its actor, source address
 * and user agent. Every REST route handler runs in the scope of its request
 * (http/audit-routes.ts), background work in `SYSTEM_SCOPE`; a write recorded
 * outside any scope throws (record.ts), so a lost actor fails the write
 * instead of going unrecorded.
 */
export interface AuditScope {
  /** The actor; rejects when the caller's credential did not resolve (no write happens then). */
  readonly actor: () => Promise<Actor>;
  readonly source: string | null;
  readonly userAgent: string | null;
}

const storage = new AsyncLocalStorage<AuditScope>();

/** The server's own writes (collectors, maintenance). */
export const SYSTEM_SCOPE: AuditScope = { actor: () => Promise.resolve(SYSTEM_ACTOR), source: null, userAgent: null };

/** Runs `fn` with `scope` as the audit scope of every write it makes. */
export function runAudited<T>(scope: AuditScope, fn: () => T): T {
  return storage.run(scope, fn);
}

/** The running call's scope, or undefined outside any. */
export function currentScope(): AuditScope | undefined {
  return storage.getStore();
}

/** A user agent as stored: cut to `AUDIT_USER_AGENT_MAX` characters; null when absent. */
export function boundedUserAgent(ua: string | string[] | undefined): string | null {
  const v = Array.isArray(ua) ? ua[0] : ua;
  if (v === undefined || v === '') return null;
  return v.length > AUDIT_USER_AGENT_MAX ? v.slice(0, AUDIT_USER_AGENT_MAX) : v;
}
