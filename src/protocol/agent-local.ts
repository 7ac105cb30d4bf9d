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
 * The API listens before the agent enrolls (holding the port is how a second
 * agent on the machine finds out at once); until then both answer 503
 * `unavailable`.
 */
export const AGENT_LOCAL_ROUTES = { forceSync: '/force-sync', status: '/status' } as const;

export const AGENT_LOCAL_DEFAULT_PORT = 8722;
