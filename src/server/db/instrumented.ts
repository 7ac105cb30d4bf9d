import type { Database, ListenHandlers, Listener, QueryObserver, Queryable, Row, Transaction } from './database.js';

/** First SQL keyword and table, for a low-cardinality metric label. */
function labelOf(text: string): string {
  if (/^\s*with\b/i.test(text)) {
    // Data-modifying CTEs make the statement a write, whatever it reads first.
    const write = /\bas\s+(?:not\s+)?(?:materialized\s+)?\(\s*(insert|update|delete)\b/i.exec(text);
    if (write?.[1]) return write[1].toLowerCase();
  }
  const m = /^\s*(?:with\s+\w+\s+as\s*\(\s*)?(\w+)/i.exec(text);
  return (m?.[1] ?? 'other').toLowerCase();
}

function observe(inner: Queryable, observer: QueryObserver): Queryable {
  return {
    async query<R extends Row = Row>(text: string, params?: readonly unknown[]): Promise<R[]> {
      const start = performance.now();
      let ok = false;
      try {
        const rows = await inner.query<R>(text, params);
        ok = true;
        return rows;
      } finally {
        observer({ durationMs: performance.now() - start, ok, label: labelOf(text) });
      }
    },
  };
}

function observeTx(inner: Transaction, observer: QueryObserver): Transaction {
  return {
    ...observe(inner, observer),
    savepoint: <T>(fn: (tx: Transaction) => Promise<T>) => inner.savepoint((sp) => fn(observeTx(sp, observer))),
  };
}

/** Wraps a database so that every query, inside transactions too, reaches `observer`. */
export function instrument(db: Database, observer: QueryObserver): Database {
  const plain = observe(db, observer);
  return {
    kind: db.kind,
    query: plain.query,
    transaction: <T>(fn: (tx: Transaction) => Promise<T>) => db.transaction((tx) => fn(observeTx(tx, observer))),
    listen: (channel: string, handlers: ListenHandlers): Promise<Listener> => db.listen(channel, handlers),
    close: () => db.close(),
  };
}
