import { PGlite } from '@electric-sql/pglite';
import type { Database, ListenHandlers, Listener, Queryable, Row } from './database.js';

/**
 * Embedded PostgreSQL (PGlite, WASM). One connection: PGlite serializes
 * queries itself, and a transaction holds it exclusively until it ends.
 * `dataDir` undefined keeps everything in memory.
 */
export async function openPglite(dataDir: string | undefined): Promise<Database> {
  const pg = dataDir === undefined ? new PGlite() : new PGlite(dataDir);
  await pg.waitReady;
  const wrap = (q: { query: PGlite['query'] }): Queryable => ({
    async query<R extends Row = Row>(text: string, params?: readonly unknown[]): Promise<R[]> {
      const res = await q.query<R>(text, params ? [...params] : undefined);
      return res.rows;
    },
  });
  const base = wrap(pg);
  return {
    kind: 'pglite',
    query: base.query,
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) => pg.transaction((tx) => fn(wrap(tx))),
    async listen(channel: string, handlers: ListenHandlers): Promise<Listener> {
      const unsub = await pg.listen(channel, (payload) => handlers.onMessage(payload));
      handlers.onConnect();
      return { close: () => unsub() };
    },
    close: () => pg.close(),
  };
}
