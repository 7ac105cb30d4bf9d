import { PGlite } from '@electric-sql/pglite';
import type { Database, ListenHandlers, Listener, Queryable, Row, Transaction } from './database.js';

function wrap(q: { query: PGlite['query'] }): Queryable {
  return {
    async query<R extends Row = Row>(text: string, params?: readonly unknown[]): Promise<R[]> {
      const res = await q.query<R>(text, params ? [...params] : undefined);
      return res.rows;
    },
  };
}

let savepoints = 0;

function wrapTx(q: { query: PGlite['query'] }): Transaction {
  const base = wrap(q);
  const tx: Transaction = {
    query: base.query,
    async savepoint<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
      const name = `fleetplane_sp_${++savepoints}`;
      await base.query(`SAVEPOINT ${name}`);
      try {
        const out = await fn(tx);
        await base.query(`RELEASE SAVEPOINT ${name}`);
        return out;
      } catch (err) {
        await base.query(`ROLLBACK TO SAVEPOINT ${name}`);
        await base.query(`RELEASE SAVEPOINT ${name}`);
        throw err;
      }
    },
  };
  return tx;
}

/** `pg` as a Database: closing it closes `pg`. */
export function asDatabase(pg: PGlite): Database {
  const base = wrap(pg);
  return {
    kind: 'pglite',
    query: base.query,
    transaction: <T>(fn: (tx: Transaction) => Promise<T>) => pg.transaction((tx) => fn(wrapTx(tx))),
    async listen(channel: string, handlers: ListenHandlers): Promise<Listener> {
      const unsub = await pg.listen(channel, (payload) => handlers.onMessage(payload));
      handlers.onConnect();
      return { close: () => unsub() };
    },
    close: () => pg.close(),
  };
}

/**
 * Embedded PostgreSQL (PGlite, WASM). One connection: PGlite serializes
 * queries itself, and a transaction holds it exclusively until it ends.
 * `dataDir` undefined keeps everything in memory; `template` is a dump of a
 * database to start from (see `pgliteTemplate`).
 */
export async function openPglite(dataDir: string | undefined, template?: Blob): Promise<Database> {
  // A template skips initdb (most of the 2 s a new in-memory database takes) and the migrations it already has.
  const pg =
    template !== undefined
      ? new PGlite({ ...(dataDir === undefined ? {} : { dataDir }), loadDataDir: template })
      : dataDir === undefined
        ? new PGlite()
        : new PGlite(dataDir);
  await pg.waitReady;
  return asDatabase(pg);
}

/** A new in-memory database, readied by `prepare` (the migrations), dumped uncompressed for `openPglite`'s `template`. */
export async function pgliteTemplate(prepare: (db: Database) => Promise<unknown>): Promise<Blob> {
  const pg = new PGlite();
  await pg.waitReady;
  try {
    await prepare(asDatabase(pg));
    return await pg.dumpDataDir('none');
  } finally {
    await pg.close();
  }
}
