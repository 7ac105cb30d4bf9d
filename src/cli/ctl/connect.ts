import { readFile } from 'node:fs/promises';
import { FleetplaneClient, type FetchLike } from '../../client/index.js';
import { fetchTrusting } from './ca-fetch.js';
import { ConfigError, configPath, loadConfig, looseModeWarning } from './config-file.js';
import { resolveConnection, type Connection, type ConnectionFlags } from './connection.js';
import type { Writable } from './writable.js';

/**
 * A client for the server the flags, the environment and the config file
 * name (see resolveConnection), trusting the connection's CA file when it
 * has one. A context read from a file others may read is warned about on
 * `stderr`. Usage errors (no server, no token) and ConfigErrors throw.
 */
export async function openClient(
  flags: ConnectionFlags,
  env: Readonly<Record<string, string | undefined>>,
  stderr: Writable,
): Promise<{ client: FleetplaneClient; connection: Connection }> {
  const loaded = await loadConfig(configPath(flags.string('config'), env));
  const connection = resolveConnection(flags, env, loaded.config, loaded.path);
  if (connection.context !== undefined) {
    const warning = looseModeWarning(loaded);
    if (warning !== undefined) stderr.write(`${warning}\n`);
  }
  let fetch: FetchLike | undefined;
  if (connection.caFile !== undefined) {
    try {
      fetch = fetchTrusting(await readFile(connection.caFile, 'utf8'));
    } catch (err) {
      throw new ConfigError(`CA file ${connection.caFile}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return { client: new FleetplaneClient({ baseUrl: connection.server, token: connection.token, fetch }), connection };
}
