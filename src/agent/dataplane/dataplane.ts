/**
 * The contract between the agent's reconcile loop and whatever makes a
 * machine reflect a DesiredDataplane.
 */
import type { DesiredDataplane, FirewallRule } from './desired-state.js';

export type DataplaneMode = 'render' | 'linux';

export interface ApplyResult {
  /** False when the machine already matched `desired` and nothing was touched. */
  changed: boolean;
  /** What was done, in order, e.g. `peer added <key>`, `firewall loaded`. Never contains secrets. */
  actions: string[];
}

export interface PeerDescription {
  public_key: string;
  /** From the last applied desired state; null for a peer the agent didn't put there. */
  device_id: string | null;
  endpoint: string | null;
  allowed_ips: string[];
  /** RFC 3339, or null when never (or not known in render mode). */
  latest_handshake: string | null;
  rx_bytes: number;
  tx_bytes: number;
}

/** What the dataplane reflects now, for the agent's status. Holds no secrets. */
export interface DataplaneDescription {
  mode: DataplaneMode;
  interface: string;
  /** False before the first successful apply, or after cleanup. */
  applied: boolean;
  address: string | null;
  listen_port: number | null;
  public_key: string | null;
  peers: PeerDescription[];
  routes: string[];
  firewall: {
    mode: 'allow-all' | 'filter';
    security_group_id: string | null;
    inbound: FirewallRule[];
    outbound: FirewallRule[];
  } | null;
  /** RFC 3339 time of the last successful apply. */
  applied_at: string | null;
}

/**
 * Makes a machine reflect a desired state.
 *
 * - `apply` is idempotent and converges from any starting point (including
 *   changes made by hand): applying the same state twice changes nothing
 *   the second time. Calls are serialized; a call waits for the previous.
 * - On failure it throws DataplaneError (the failed `step`, `cause` the
 *   underlying error) or DataplaneAbortedError. Whatever was working stays
 *   in place: nothing is torn down to be rebuilt, and a step that fails
 *   leaves what it manages as it was where the tool allows (the firewall is
 *   replaced atomically or not at all; peers are changed one by one). The
 *   caller retries with exponential backoff; the next apply recomputes the
 *   differences from the machine, so a partial apply is repaired.
 * - `cleanup` removes everything this dataplane created (interface, routes,
 *   firewall table, rendered files). Safe to call when nothing exists.
 * - `describe` reports the current state; it never throws for a missing
 *   interface (it reports no peers).
 */
export interface Dataplane {
  readonly mode: DataplaneMode;
  apply(desired: DesiredDataplane, signal?: AbortSignal): Promise<ApplyResult>;
  cleanup(signal?: AbortSignal): Promise<void>;
  describe(signal?: AbortSignal): Promise<DataplaneDescription>;
}
