/** A row as the drivers return it: column name → parsed value. */
export type Row = Record<string, unknown>;

/**
 * Something SQL can be sent to: the database itself or one transaction.
 * Parameters are `$1..$n`; the SQL is the same on PGlite and PostgreSQL.
 * JSON parameters are passed as strings and cast with `$n::text::jsonb`.
 */
export interface Queryable {
  query<R extends Row = Row>(text: string, params?: readonly unknown[]): Promise<R[]>;
}

/** One transaction: its queries, and savepoints inside it. */
export interface Transaction extends Queryable {
  /**
   * Runs `fn` in a savepoint: when `fn` throws, what it did is undone, the
   * transaction goes on, and the error is rethrown; when it resolves, its
   * work stays part of the transaction.
   */
  savepoint<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
}

/** Callbacks of a LISTEN session. */
export interface ListenHandlers {
  onMessage(payload: string): void;
  /** Called after the listening session (re)connected: messages may have been missed before it. */
  onConnect(): void;
}

export interface Listener {
  close(): Promise<void>;
}

/**
 * The storage engine: PGlite (embedded, one process) or PostgreSQL.
 * `transaction` commits when `fn` resolves and rolls back when it throws.
 */
export interface Database extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /** Opens a dedicated LISTEN session on `channel` (its own connection on PostgreSQL). */
  listen(channel: string, handlers: ListenHandlers): Promise<Listener>;
  close(): Promise<void>;
}

/** Observes every query, for metrics and for tests that count queries. */
export interface QueryObserver {
  (info: { durationMs: number; ok: boolean; label: string }): void;
}

/**
 * A json or jsonb column's value as the driver gave it: parsed by one
 * driver, text from the other. The caller knows the shape (the statement
 * built it); null stays null.
 */
export function jsonColumn<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

/** PostgreSQL error code for a unique-constraint violation. */
export const UNIQUE_VIOLATION = '23505';
export const FOREIGN_KEY_VIOLATION = '23503';

export function pgErrorCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = (err as { code: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}

export function pgConstraint(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null) {
    const e = err as { constraint?: unknown; constraint_name?: unknown };
    const c = e.constraint ?? e.constraint_name;
    return typeof c === 'string' ? c : undefined;
  }
  return undefined;
}
