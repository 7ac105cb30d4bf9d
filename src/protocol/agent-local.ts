/**
 * The agent's local HTTP API: served on loopback only, by `fleetplane agent`
 * (the force-sync hook of dynamic ASGs, and a status page for the machine).
 *
 * - `POST /force-sync`: re-lists from the server, reconciles, answers 200
 *   `{applied_revision}` once the dataplane reflects it; 503 `unavailable`
 *   when the server can't be reached; errors in the protocol's error body.
 * - `GET /status`: the agent's view as JSON (device, applied revision, last
 *   apply error, peers, connection state).
 *
 * The API listens before the agent enrolls; until then both answer 503
 * `unavailable`. Where it listens is in the state directory's
 * AGENT_LOCAL_ADDRESS_FILE while the agent runs.
 */
export const AGENT_LOCAL_ROUTES = { forceSync: '/force-sync', status: '/status' } as const;

/** The only address the local API listens on. */
export const AGENT_LOCAL_HOST = '127.0.0.1';

/**
 * The local API's port unless `--local-port` says otherwise: 0, a free port
 * the system picks, so agents with different state directories run side by
 * side on one machine. Clients find it in AGENT_LOCAL_ADDRESS_FILE.
 */
export const AGENT_LOCAL_DEFAULT_PORT = 0;

/**
 * The file in the agent's state directory that says where the local API
 * listens: one line, `HOST:PORT` and a newline (`127.0.0.1:41873\n`), so a
 * script can `curl "http://$(cat "$STATE_DIR/local-api.address")/status"`.
 * Written whole (a temporary file renamed into place) once the API
 * listens, whatever the port; removed when the agent stops. A file left by
 * an agent that was killed names a port that may be closed, or reused by
 * something else, until the next start replaces it.
 */
export const AGENT_LOCAL_ADDRESS_FILE = 'local-api.address';

/** Where a local API listens, as AGENT_LOCAL_ADDRESS_FILE holds it. */
export interface AgentLocalAddress {
  host: string;
  port: number;
}

/** The content of AGENT_LOCAL_ADDRESS_FILE for `address`. */
export function formatAgentLocalAddress(address: AgentLocalAddress): string {
  return `${address.host}:${address.port}\n`;
}

/** The base URL of the local API at `address` (`http://127.0.0.1:41873`); routes follow it. */
export function agentLocalUrl(address: AgentLocalAddress): string {
  return `http://${address.host}:${address.port}`;
}

/**
 * Reads the content of AGENT_LOCAL_ADDRESS_FILE: an IPv4 host and a port
 * 1..65535 on one line (a trailing newline or none). Undefined for
 * anything else.
 */
export function parseAgentLocalAddress(text: string): AgentLocalAddress | undefined {
  const m = /^(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})\r?\n?$/.exec(text);
  if (!m?.[1] || !m[2]) return undefined;
  const port = Number(m[2]);
  if (port < 1 || port > 65535 || m[1].split('.').some((b) => Number(b) > 255)) return undefined;
  return { host: m[1], port };
}
