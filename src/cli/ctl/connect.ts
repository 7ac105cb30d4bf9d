import { readFile } from 'node:fs/promises';
import { FleetplaneClient, type FetchLike } from '../../client/index.js';
import { noticingTls } from '../../util/plain-http-to-tls.js';
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
  return { client: new FleetplaneClient({ baseUrl: connection.server, token: connection.token, fetch: await ctlFetch(connection.caFile) }), connection };
}

/**
 * The fetch of ctl's clients: trusting the PEM certificates of `caFile`
 * when one is given (a ConfigError when it can't be read), and failing a
 * plain-HTTP request to a server that speaks HTTPS with a
 * PlainHttpToTlsError saying so (util/plain-http-to-tls.ts).
 */
export async function ctlFetch(caFile: string | undefined): Promise<FetchLike> {
  if (caFile === undefined) return noticingTls((input, init) => globalThis.fetch(input, init));
  try {
    return noticingTls(fetchTrusting(await readFile(caFile, 'utf8')));
  } catch (err) {
    throw new ConfigError(`CA file ${caFile}: ${err instanceof Error ? err.message : String(err)}`);
  }
}
