/**
 * The agent daemon (`fleetplane agent`): enrolls a machine, keeps its
 * dataplane in line with its organization, and reports what it applied.
 */
export { Agent, defaultDataplane, type AgentDeps } from './agent.js';
export type { AgentStatusView, TunnelStateType } from './agent-status.js';
export { parseAgentOptions, agentHelp, AgentOptionsError, AGENT_DEFAULTS, AGENT_FLAGS, type AgentOptions, type AgentLogLevel } from './options.js';
export { AgentFatalError, type FatalReason } from './errors.js';
export { StateDir, StateDirError, PRIVATE_KEY_FILE, IDENTITY_FILE, type DeviceIdentity } from './state-dir.js';
export { DirtySet } from './dirty-set.js';
export { StatusReporter, type StatusFields, type StatusReporterOptions, type StatusReporterStats } from './status-reporter.js';
export { Reconciler, type ReconcilerState, type ReconcileOutcome, type ReconcileOptions } from './reconciler.js';
export { relistSnapshot, type Snapshot } from './snapshot.js';
export { interfaceEndpoints, publishedEndpoints, sameEndpoints, MAX_ENDPOINTS, type InterfaceTable } from './endpoints.js';
export { ForceSyncError, type ForceSyncErrorCode, type ForceSyncResult } from './force-sync.js';
