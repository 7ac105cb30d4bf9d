import postgres from 'postgres';
import type { Database, ListenHandlers, Listener, Queryable, Row, Transaction } from './database.js';
import { DEFAULT_POOL_SIZE } from './pool-sizes.js';

export { DEFAULT_POOL_SIZE };

export interface PostgresOptions {
  /** Pool size for queries (default DEFAULT_POOL_SIZE); LISTEN uses a connection of its own on top. */
  max?: number | undefined;
  onNotice?: (message: string) => void;
}

type Params = Parameters<postgres.Sql['unsafe']>[1];

/**
 * postgres.js reads no `host` query parameter; libpq does, and it is how a
 * URL names a Unix socket directory (`postgres://u@localhost/db?host=/run/pg`).
 */
export function socketAware(url: string): { url: string; host?: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { url };
  }
  const host = parsed.searchParams.get('host');
  if (host === null || !host.startsWith('/')) return { url };
  parsed.searchParams.delete('host');
  return { url: parsed.toString(), host };
}

/** A real PostgreSQL through a postgres.js pool. */
export async function openPostgres(url: string, options: PostgresOptions = {}): Promise<Database> {
  const target = socketAware(url);
  const sql = postgres(target.url, {
    ...(target.host === undefined ? {} : { host: target.host }),
    max: options.max ?? DEFAULT_POOL_SIZE,
    // Our statements are short and frequent; JIT compiling the few the planner costs high (the convergence count over
    // 10,000 devices) took longer than running them: 75 ms instead of 36 ms each on PostgreSQL 15 (README "Storage").
    connection: { jit: 'off' },
    onnotice: (n) => options.onNotice?.(String(n['message'] ?? '')),
    // Revisions are bigint; they stay below 2^53 (docs/protocol.md), so numbers are exact.
    types: {
      int8: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
    },
    transform: { undefined: null },
  });
  const wrap = (q: postgres.Sql | postgres.TransactionSql): Queryable => ({
    async query<R extends Row = Row>(text: string, params?: readonly unknown[]): Promise<R[]> {
      const rows = await q.unsafe(text, (params ?? []) as Params);
      return rows as unknown as R[];
    },
  });
  // postgres.js fails a whole transaction once any query in it failed, unless that query ran in its own savepoint.
  const wrapTx = (q: postgres.TransactionSql): Transaction => ({
    ...wrap(q),
    savepoint: async <T>(fn: (tx: Transaction) => Promise<T>): Promise<T> => (await q.savepoint((sp) => fn(wrapTx(sp)))) as T,
  });
  // Fail fast on a bad URL instead of on the first request.
  await sql`select 1`;
  const base = wrap(sql);
  return {
    kind: 'postgres',
    query: base.query,
    transaction: async <T>(fn: (tx: Transaction) => Promise<T>): Promise<T> => {
      const result = await sql.begin((tx) => fn(wrapTx(tx)));
      return result as T;
    },
    async listen(channel: string, handlers: ListenHandlers): Promise<Listener> {
      // postgres.js keeps LISTEN on a dedicated connection, reconnects it by itself
      // and calls onlisten after every (re)connect.
      const meta = await sql.listen(channel, (payload) => handlers.onMessage(payload), () => handlers.onConnect());
      return { close: () => meta.unlisten() };
    },
    close: () => sql.end({ timeout: 5 }),
  };
}
