import type { FleetApi } from '../http-api.js';
import { FleetServer } from './fleet-server.js';
import { hasPostgres, startPostgres, type BenchPostgres } from './postgres.js';

/** A server on one storage, for scenarios that measure PGlite and PostgreSQL side by side. */
export interface StorageRun {
  name: 'pglite' | 'postgresql';
  server: FleetServer;
  api: FleetApi;
  /** The throwaway cluster behind `postgresql` (its CPU can be read); undefined on PGlite. */
  pg: BenchPostgres | undefined;
}

/**
 * Runs `body` on PGlite in memory, then on a throwaway PostgreSQL when it is
 * installed (else `notes` says it was skipped). Each storage gets its own
 * server process, stopped with its database afterwards, however `body`
 * ends. Returns each server's command line by storage.
 */
export async function forEachStorage(
  database: string,
  maxSockets: number,
  notes: string[],
  body: (run: StorageRun) => Promise<void>,
): Promise<Record<string, string>> {
  const servers: Record<string, string> = {};
  const names: StorageRun['name'][] = ['pglite'];
  if (hasPostgres()) names.push('postgresql');
  else notes.push('PostgreSQL skipped: it is not installed (/usr/lib/postgresql/15/bin).');
  for (const name of names) {
    const pg = name === 'postgresql' ? await startPostgres() : undefined;
    try {
      const server = await FleetServer.start(pg ? { databaseUrl: await pg.createDatabase(database) } : {});
      servers[name] = server.commandLine;
      const api = server.api(maxSockets);
      try {
        await body({ name, server, api, pg });
      } finally {
        api.close();
        await server.stop();
      }
    } finally {
      pg?.stop();
    }
  }
  return servers;
}
