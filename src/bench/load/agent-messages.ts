/**
 * The RPC between the harness (load/agent-pool.ts) and its simulated-agent
 * worker processes (load/agent-worker.ts), over the child_process IPC
 * channel with `advanced` serialization. Every request gets exactly one
 * reply with the same id. Times are the worker's nowMs(); the pool turns
 * them into the harness's clock.
 */
import type { AgentCounters } from './agent-counters.js';

/** A device an agent speaks for: its id and its device token (`device_token` of its creation). */
export interface AgentIdentity {
  deviceId: string;
  token: string;
}

/**
 * How agents acknowledge the revision they have seen: a tunnel `status`
 * frame, `PUT .../status`, or not at all (the raw floor serves only the list).
 */
export type AckMode = 'tunnel' | 'put' | 'none';

/** What agents connect to. */
export interface AgentTarget {
  host: string;
  port: number;
  org: string;
  /** Open the tunnel as well (fleetplane); false for the raw floor. */
  tunnel: boolean;
  ack: AckMode;
}

/**
 * Per-agent values the harness waits on; each only rises while an agent runs:
 * `seen` (revision seen, all kinds at their tails), `acked` (revision whose
 * ACK the server confirmed), `ready` (last time the watch was at its tails
 * on an open stream), `tunnel` (last time the tunnel opened).
 */
export type ProgressField = 'seen' | 'acked' | 'ready' | 'tunnel';

export interface SetupArgs {
  agents: AgentIdentity[];
  /** Loopback source addresses; agent i uses localAddresses[floor(i / agentsPerAddress)]. */
  localAddresses: string[];
  agentsPerAddress: number;
  /** Keep-alive sockets of the worker's PUT pool. */
  putConnections: number;
}

export interface JoinArgs {
  target: AgentTarget;
  /** Agents joining at once: an agent holds its slot from its start until its watch is at its tails. */
  concurrency: number;
  timeoutMs: number;
}

export interface JoinResult {
  /** When the first agent started. */
  startedAt: number;
  /** Per agent: when its watch first reached its tails (NaN: not within the timeout). */
  readyAt: Float64Array;
}

export interface AwaitArgs {
  field: ProgressField;
  /** Wait until every running agent's value is ≥ this. */
  atLeast: number;
  timeoutMs: number;
}

export interface AwaitResult {
  /** Per agent: when its value last rose, if it is ≥ atLeast (NaN otherwise, or not running). */
  times: Float64Array;
  running: number;
}

/** Connection gauges at the moment of the call. */
export interface AgentGauges {
  agents: number;
  running: number;
  watchesOpen: number;
  watchesReady: number;
  tunnelsOpen: number;
}

export interface AgentWorkerApi {
  setup: { args: SetupArgs; result: { agents: number } };
  join: { args: JoinArgs; result: JoinResult };
  /** Resets every agent's connections; they stay stopped until the next join. */
  stopAll: { args: Record<string, never>; result: { stopped: number } };
  setAck: { args: { mode: AckMode }; result: { agents: number } };
  await: { args: AwaitArgs; result: AwaitResult };
  counters: { args: Record<string, never>; result: { counters: AgentCounters; gauges: AgentGauges } };
  clock: { args: Record<string, never>; result: { now: number } };
}

export type AgentMethod = keyof AgentWorkerApi;

export interface AgentRequest<M extends AgentMethod = AgentMethod> {
  id: number;
  method: M;
  args: AgentWorkerApi[M]['args'];
}

export type AgentReply = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: string };

/** Sockets per simulated agent on the client and on the server: its watch stream and its tunnel. */
export const SOCKETS_PER_AGENT = 2;
