import type { Database } from '../database.js';
import { openPostgres, type PostgresOptions } from '../postgres.js';
import { EMBEDDED_POOL_SIZE } from '../pool-sizes.js';
import { startEmbeddedPostgres, type EmbeddedOptions, type EmbeddedPostgres } from './embedded-postgres.js';

/** The embedded PostgreSQL with a pool on it; closing the database also stops PostgreSQL. */
export interface EmbeddedDatabase {
  readonly db: Database;
  readonly exited: EmbeddedPostgres['exited'];
}

export { EMBEDDED_POOL_SIZE } from '../pool-sizes.js';

/** Starts the data directory's PostgreSQL and opens a pool on it (default EMBEDDED_POOL_SIZE); a pool that can't open stops it again. */
export async function openEmbedded(o: EmbeddedOptions, pool: PostgresOptions = {}): Promise<EmbeddedDatabase> {
  const embedded = await startEmbeddedPostgres(o);
  let db: Database;
  try {
    db = await openPostgres(embedded.url, { ...pool, max: pool.max ?? EMBEDDED_POOL_SIZE });
  } catch (err) {
    await embedded.stop();
    throw err;
  }
  return { db: { ...db, close: () => db.close().finally(() => embedded.stop()) }, exited: embedded.exited };
}
