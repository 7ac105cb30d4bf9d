/**
 * The RPC between the harness (load/pool.ts) and its load-generator worker
 * processes (load/worker.ts), over the child_process IPC channel with the
 * `advanced` serialization (typed arrays travel as such). Every request gets
 * exactly one reply with the same id.
 */

export interface Endpoint {
  host: string;
  port: number;
}

/** How a watch connection is opened. Socket i goes to endpoints[i % endpoints.length]. */
export interface WatchSpec {
  endpoints: Endpoint[];
  path: string;
  headers: Record<string, string>;
  /** Body `[{"kind":"device","gt_revision":…,"at_tail":…}]`. */
  gtRevision: number;
  atTail: boolean;
}

/** How a poller lists. Poller i goes to endpoints[i % endpoints.length]. */
export interface PollSpec {
  endpoints: Endpoint[];
  path: string;
  headers: Record<string, string>;
  /** Send `If-None-Match` with the last ETag (docs/protocol.md "Lists"). */
  useEtag: boolean;
}

export interface OpenArgs {
  spec: WatchSpec;
  count: number;
  /** Loopback source addresses to bind, `perAddress` sockets each. */
  localAddresses: string[];
  perAddress: number;
  /** Connections being set up at once. */
  concurrency: number;
  timeoutMs: number;
}

export interface OpenResult {
  opened: number;
  failed: number;
  /** The first few failures, for the report. */
  errors: string[];
}

export interface CollectArgs {
  revision: number;
  timeoutMs: number;
}

export interface CollectResult {
  /** Receive time (worker clock, ms) of the change per connection of the worker; NaN when not received. */
  times: Float64Array;
  missing: number;
}

export interface ResumeArgs {
  /** Each closed connection reopens from its own last position with at_tail. */
  untilRevision: number;
  concurrency: number;
  timeoutMs: number;
}

export interface ResumeResult {
  /** When the reopen of all connections began (worker clock). */
  startedAt: number;
  /** Per connection: when its position reached untilRevision (NaN: never). */
  reachedAt: Float64Array;
  /** Per connection: NDJSON body bytes and wire bytes (headers, chunk framing) received since the reopen. */
  bodyBytes: Float64Array;
  wireBytes: Float64Array;
  failed: number;
  errors: string[];
}

export interface Counters {
  open: number;
  closedByServer: number;
  errorEvents: number;
  errorCodes: Record<string, number>;
  unparsedLines: number;
  lines: number;
  bodyBytes: number;
  /** Bytes read by every open watch socket (head, framing, body). */
  wireBytes: number;
}

export interface PollRunArgs {
  spec: PollSpec;
  count: number;
  localAddresses: string[];
  perAddress: number;
  intervalMs: number;
  durationMs: number;
}

export interface PollResult {
  polls: number;
  full: number;
  notModified: number;
  failed: number;
  bodyBytes: number;
  wireBytes: number;
  /** p50, p99 and max latency of the lists, ms. */
  latenciesMs: Float64Array;
  errors: string[];
}

export interface WorkerApi {
  open: { args: OpenArgs; result: OpenResult };
  /** Resets every connection; with `forget`, they are dropped (a later resume won't reopen them). */
  close: { args: { forget: boolean }; result: { closed: number } };
  collectChange: { args: CollectArgs; result: CollectResult };
  resume: { args: ResumeArgs; result: ResumeResult };
  counters: { args: Record<string, never>; result: Counters };
  clock: { args: Record<string, never>; result: { now: number } };
  pollRun: { args: PollRunArgs; result: PollResult };
}

export type Method = keyof WorkerApi;

export interface RequestMessage<M extends Method = Method> {
  id: number;
  method: M;
  args: WorkerApi[M]['args'];
}

export type ReplyMessage = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: string };

/** One process holds at most this many sockets (hard `ulimit -n` is 20,000: NOTES.md). */
export const MAX_SOCKETS_PER_WORKER = 18_000;
