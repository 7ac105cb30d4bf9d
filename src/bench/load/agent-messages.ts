/**
 * The RPC between the harness (load/agent-pool.ts) and its simulated-agent
 * worker processes (load/agent-worker.ts), over the child_process IPC
 * channel with `advanced` serialization. Every request gets exactly one
 * reply with the same id. Times are the worker's nowMs(); the pool turns
 * them into the harness's clock.
 */
import type { DevicePatch } from '../../protocol/index.js';
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
  /**
   * The server sends a bookmark on a stream idle for its bookmark interval
   * (fleetplane), so a stream silent for longer is a dead connection the
   * agent must give up. False for the raw floor, which writes only its list.
   */
  bookmarks: boolean;
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

/** Where one agent's watch is: for the report of agents not at their tails when a wait times out. */
export interface WatchDiagnosis {
  deviceId: string;
  /** The watch's own state: idle, connecting, answered, open, ended. */
  state: string;
  ready: boolean;
  /** A reconnect is scheduled. */
  retryArmed: boolean;
  /** A socket is held (connecting or open). */
  socketHeld: boolean;
  /** Silence after which an open stream is given up (null: never, the server sends no bookmarks). */
  silenceMs: number | null;
  /** Kinds whose tail was seen, and per kind the highest revision seen (WATCH_KINDS order). */
  tailed: string[];
  revisions: number[];
  bookmark: number;
  /** The watch's last transitions, oldest first ("-<ms ago> <what>"). */
  trace: string[];
}

/** Agents not at their tails, counted by where their watch is, with a few of them in detail. */
export interface StuckReport {
  byState: Record<string, number>;
  examples: WatchDiagnosis[];
}

/** Agents that PATCH their own device, all at once. */
export interface PatchArgs {
  org: string;
  /** `agent`: the agent's index in this worker. */
  patches: { agent: number; body: DevicePatch }[];
}

/** How one agent's PATCH of its own device ended. */
export interface PatchOutcome {
  agent: number;
  /** HTTP status; 0 when the connection failed. */
  status: number;
  /** The device's revision in the answer (NaN unless 200). */
  revision: number;
  /** Bytes of the watch line this change should be: the answer's device, without `status` (NaN unless 200). */
  lineBytes: number;
  /** When the request was handed to the worker's pool, and when its answer ended (worker clock). */
  sentAt: number;
  doneAt: number;
  error?: string;
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
  /** Each listed agent PATCHes its own device with its token, all at once; resolves when every answer is in. */
  patch: { args: PatchArgs; result: { outcomes: PatchOutcome[] } };
  await: { args: AwaitArgs; result: AwaitResult };
  counters: { args: Record<string, never>; result: { counters: AgentCounters; gauges: AgentGauges } };
  /** Running agents whose watch isn't at its tails; at most `examples` of them in detail. */
  stuck: { args: { examples: number }; result: StuckReport };
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
