/**
 * The agent daemon (`fleetplane agent`): enrolls a machine, keeps its
 * dataplane in line with its organization, and reports what it applied.
 * This file is the agent's only public entry. Inside, by concern:
 * identity/ (enrollment, the state directory and its lock, the device
 * token, the CA it trusts), received/ (the checks of everything the server
 * sends), sync/ (the watch on the organization, its saved resume point,
 * admitting snapshots, reconciling and force-sync), status/ (what the device
 * reports: status, endpoints, version), tunnel/ (the server's connection to
 * the agent) and dataplane/ (WireGuard and nftables). At the top: the
 * daemon, its settings, its local API and the file that says where it
 * listens (read by the API's clients).
 */
export { Agent, defaultDataplane, type AgentDeps } from './agent.js';
export type { AgentStatusView, TunnelStateType } from './status/agent-status.js';
export { parseAgentOptions, agentHelp, AgentOptionsError, AGENT_DEFAULTS, AGENT_EXAMPLES, AGENT_FLAGS, type AgentOptions, type AgentLogLevel } from './options.js';
export { AgentFatalError, type FatalReason } from './errors.js';
export { caFileHint } from './transient.js';
export { StateDir, StateDirError, PRIVATE_KEY_FILE, IDENTITY_FILE, type DeviceIdentity } from './identity/state-dir.js';
export { LocalApiAddressError, localApiAddressPath, readLocalApiAddress } from './local-api-address.js';
export { DirtySet } from './status/dirty-set.js';
export { StatusReporter, type StatusFields, type StatusReporterOptions, type StatusReporterStats } from './status/status-reporter.js';
export { Reconciler, type ReconcilerState, type ReconcileOutcome, type ReconcileOptions } from './sync/reconciler.js';
export { relistSnapshot, type Snapshot } from './sync/snapshot.js';
export type { RejectedObject } from './sync/snapshot-admission.js';
export { interfaceEndpoints, publishedEndpoints, sameEndpoints, MAX_ENDPOINTS, type InterfaceTable } from './status/endpoints.js';
export { ForceSyncError, type ForceSyncErrorCode, type ForceSyncResult } from './sync/force-sync.js';
