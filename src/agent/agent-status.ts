/**
 * The agent's view of itself: what `GET /status` (local) and the `status`
 * tunnel method answer. Holds no secrets (no keys, no token).
 */
import type { InformerStatus } from '../client/index.js';
import type { DataplaneDescription, DataplaneMode, SkippedItem } from './dataplane/index.js';
import type { StatusReporterStats } from './status-reporter.js';

export type TunnelStateType = 'idle' | 'connecting' | 'connected' | 'retrying' | 'stopped';

export interface AgentStatusView {
  device_id: string;
  organization_id: string;
  hostname: string;
  public_key: string;
  agent_version: string;
  dataplane: DataplaneMode;
  interface: string;
  /** The revision the dataplane reflects (null before the first apply). */
  applied_revision: number | null;
  /** The last apply's failure, null when it succeeded. */
  apply_error: string | null;
  applied_at: string | null;
  /** Number of WireGuard peers the dataplane has. */
  peers: number;
  /** The watch stream is up and following changes. */
  connected: boolean;
  watch: InformerStatus['type'];
  /** The revision the watch caches are consistent with (null while listing). */
  watch_revision: number | null;
  tunnel: TunnelStateType;
  /** Endpoints this device publishes. */
  endpoints: string[];
  local_endpoints: string[];
  status_report: StatusReporterStats;
  /** Inputs left out of the desired state (invalid or conflicting), at the last apply. */
  skipped: SkippedItem[];
  /** Peers, routes and firewall rules as the dataplane has them; null when it couldn't be read. */
  detail: DataplaneDescription | null;
}
