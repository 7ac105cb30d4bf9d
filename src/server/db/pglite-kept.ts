import { PGlite } from '@electric-sql/pglite';
import type { Database, ListenHandlers, Listener, Transaction } from './database.js';
import { asDatabase } from './pglite.js';

/**
 * At most this many emptied databases wait per template in a process (each
 * holds about 250 MB); one closed past it is closed for real. A test worker
 * runs one file at a time, and most start one or two servers at once.
 */
export const KEPT_LIMIT = 2;

/**
 * How long an emptied database waits for the next server before it is
 * closed for real: PostgreSQL's own timers keep the process's event loop
 * running while it is open, and a program whose last server closed should
 * not wait on it for long.
 */
export const KEPT_IDLE_MS = 5_000;

/** What a template's database holds when loaded: emptying it again restores exactly that. */
interface Baseline {
  /** One statement: every table that was empty, emptied, its sequences restarted. */
  truncate: string;
  /** Tables that held rows (the schema's versions), with their rows as JSON. */
  rows: { table: string; json: string }[];
}

interface Kept {
  pg: PGlite;
  baseline: Baseline;
  /** While it waits: what closes it at KEPT_IDLE_MS. */
  expiry?: NodeJS.Timeout;
}

const idle = new Map<Blob, Kept[]>();

const quote = (name: string): string => `"${name.replace(/"/g, '""')}"`;

async function readBaseline(pg: PGlite): Promise<Baseline> {
  const tables = (await pg.query<{ name: string }>(`SELECT c.relname AS name FROM pg_class c WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace ORDER BY 1`)).rows.map((r) => r.name);
  const empty: string[] = [];
  const rows: Baseline['rows'] = [];
  for (const table of tables) {
    const json = (await pg.query<{ j: string | null }>(`SELECT json_agg(t)::text AS j FROM ${quote(table)} t`)).rows[0]?.j ?? null;
    if (json === null) empty.push(table);
    else rows.push({ table, json });
  }
  return { truncate: empty.length > 0 ? `TRUNCATE ${empty.map(quote).join(', ')} RESTART IDENTITY CASCADE` : 'SELECT 1', rows };
}

/**
 * Back to the template: the rows, the sequences, and the session (settings,
 * advisory locks, temporary tables, prepared statements). LISTENs were ended
 * by the lease that held them.
 */
async function empty(kept: Kept): Promise<void> {
  const { pg, baseline } = kept;
  await pg.exec(`RESET ALL; SELECT pg_advisory_unlock_all(); DISCARD TEMP; DEALLOCATE ALL; ${baseline.truncate};`);
  for (const { table, json } of baseline.rows) {
    await pg.query(`DELETE FROM ${quote(table)}`);
    await pg.query(`INSERT INTO ${quote(table)} SELECT * FROM json_populate_recordset(NULL::${quote(table)}, $1::json)`, [json]);
  }
}

/**
 * One server's use of a kept database: once closed, it refuses every call
 * (a late query of a closed server must not reach the next server's data),
 * ends the LISTENs it opened, and gives the database back.
 */
function lease(kept: Kept, template: Blob): Database {
  const base = asDatabase(kept.pg);
  let open = true;
  const listeners = new Set<Listener>();
  const check = (): void => {
    if (!open) throw new Error('the database is closed');
  };
  return {
    kind: 'pglite',
    query: (text, params) => {
      check();
      return base.query(text, params);
    },
    transaction: <T>(fn: (tx: Transaction) => Promise<T>): Promise<T> => {
      check();
      return base.transaction(fn);
    },
    async listen(channel: string, handlers: ListenHandlers): Promise<Listener> {
      check();
      const inner = await base.listen(channel, handlers);
      const listener: Listener = {
        close: async () => {
          if (!listeners.delete(listener)) return;
          await inner.close();
        },
      };
      listeners.add(listener);
      return listener;
    },
    async close(): Promise<void> {
      if (!open) return;
      open = false;
      for (const l of [...listeners]) await l.close();
      const waiting = idle.get(template) ?? [];
      if (waiting.length >= KEPT_LIMIT) {
        await kept.pg.close();
        return;
      }
      try {
        await empty(kept);
      } catch (err) {
        // Not reusable: closed, and the next server opens a new one.
        await kept.pg.close();
        throw err;
      }
      waiting.push(kept);
      idle.set(template, waiting);
      kept.expiry = setTimeout(() => {
        const at = waiting.indexOf(kept);
        if (at < 0) return;
        waiting.splice(at, 1);
        kept.pg.close().catch((err: unknown) => process.emitWarning(`closing an in-memory database nobody took failed: ${String(err)}`));
      }, KEPT_IDLE_MS);
      kept.expiry.unref();
    },
  };
}

/**
 * An in-memory database started from `template` (a `pgliteTemplate` dump),
 * kept by the process when its server closes and emptied back to the
 * template for the next one: opening one costs about 0.85 s of CPU (the
 * template's files written into the WASM file system, PostgreSQL started),
 * emptying it a few tens of ms. For processes that start many servers (the
 * test suite); the data of one is never seen by the next. One nobody takes
 * within KEPT_IDLE_MS is closed.
 */
export async function openKeptPglite(template: Blob): Promise<Database> {
  const reused = idle.get(template)?.pop();
  if (reused) {
    clearTimeout(reused.expiry);
    return lease(reused, template);
  }
  const pg = new PGlite({ loadDataDir: template });
  await pg.waitReady;
  return lease({ pg, baseline: await readBaseline(pg) }, template);
}
