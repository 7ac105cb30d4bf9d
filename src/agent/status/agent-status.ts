/**
 * The agent's view of itself: what `GET /status` (local) and the `status`
 * tunnel method answer. Holds no secrets (no keys, no token).
 */
import type { Logger } from 'pino';
import type { InformerStatus } from '../../client/index.js';
import type { Dataplane, DataplaneDescription, DataplaneMode, SkippedItem } from '../dataplane/index.js';
import type { DeviceIdentity } from '../identity/state-dir.js';
import type { OrgWatch } from '../sync/org-watch.js';
import type { Reconciler } from '../sync/reconciler.js';
import type { RejectedObject } from '../sync/snapshot-admission.js';
import type { StatusReporter, StatusReporterStats } from './status-reporter.js';
import { agentVersion } from './version.js';

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
  /** Objects of the last snapshot that failed the protocol's schemas: not applied (their last valid state stays, or they are left out). */
  rejected: RejectedObject[];
  /** Peers, routes and firewall rules as the dataplane has them; null when it couldn't be read. */
  detail: DataplaneDescription | null;
}

const DESCRIBE_TIMEOUT_MS = 5_000;

/** The running parts the view is read from. */
export interface AgentStatusSources {
  identity: DeviceIdentity;
  publicKey: string;
  /** The hostname the agent enrolled with, shown until the watch has the device. */
  hostname: string;
  mode: DataplaneMode;
  interfaceName: string;
  dataplane: Dataplane;
  reconciler: Reconciler;
  watch: OrgWatch;
  reporter: StatusReporter;
  tunnel: TunnelStateType;
  logger: Logger;
}

/**
 * The view as of now. A dataplane that can't be described within a few
 * seconds (or before `signal` aborts) gives `detail: null` and a warning;
 * the rest is always answered.
 */
export async function describeAgent(s: AgentStatusSources, signal?: AbortSignal): Promise<AgentStatusView> {
  const { identity } = s;
  let detail: DataplaneDescription | null = null;
  try {
    detail = await s.dataplane.describe(AbortSignal.any([AbortSignal.timeout(DESCRIBE_TIMEOUT_MS), ...(signal ? [signal] : [])]));
  } catch (err) {
    s.logger.warn({ err }, 'describing the dataplane failed');
  }
  const state = s.reconciler.state;
  const own = s.watch.device(identity.device_id);
  return {
    device_id: identity.device_id,
    organization_id: identity.organization_id,
    hostname: own?.hostname ?? s.hostname,
    public_key: s.publicKey,
    agent_version: agentVersion(),
    dataplane: s.mode,
    interface: s.interfaceName,
    applied_revision: state.applied_revision,
    apply_error: state.apply_error,
    applied_at: state.applied_at,
    peers: detail?.peers.length ?? 0,
    connected: s.watch.connected,
    watch: s.watch.status().type,
    watch_revision: s.watch.revision() ?? null,
    tunnel: s.tunnel,
    endpoints: (own?.endpoints ?? []).map((e) => e.address),
    local_endpoints: s.reporter.fields.local_endpoints,
    status_report: { ...s.reporter.stats },
    skipped: state.skipped,
    rejected: state.rejected,
    detail,
  };
}
