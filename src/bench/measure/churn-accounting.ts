import type { DevicePatch } from '../../protocol/index.js';
import { publishedEndpoints } from '../../agent/status/endpoints.js';
import { COUNTER, EVENT_BYTES_PREFIX, EVENTS_PREFIX, allErrors, describeCounters, sumOf, type AgentCounters } from '../load/agent-counters.js';

/** The share of the fleet that changes its public endpoint at once in (g) (issue 34). */
export const CHURN_SHARE = 0.1;
/** (g): the most one endpoint change's watch event may weigh (mean over the step). */
export const CHURN_EVENT_BYTES_LIMIT = 2 * 1024;
/** The WireGuard port the simulated devices publish their local endpoints with. */
const LISTEN_PORT = 51820;

/** How many of `n` agents change their endpoint: n × CHURN_SHARE, at least one. */
export function churnCount(n: number): number {
  return Math.max(1, Math.round(n * CHURN_SHARE));
}

/** Which agents (indexes in the pool's order) change: spread evenly, so every load worker and source address has its share. */
export function churnAgents(n: number): number[] {
  const k = Math.min(n, churnCount(n));
  return Array.from({ length: k }, (_, j) => Math.floor((j * n) / k));
}

/**
 * Where agent `agent` is reachable: its STUN mapping, which moves between
 * generations (a new public address and port, as after a change of
 * network or NAT; RFC 5737 documentation ranges), and its two interface
 * addresses (a private IPv4 and a unique local IPv6 one), which don't.
 */
export function churnEndpoints(agent: number, generation: number): { stun: string; local: string[] } {
  const publicNet = generation % 2 === 0 ? '198.51.100' : '203.0.113';
  const stun = `${publicNet}.${1 + (agent % 254)}:${20_000 + ((agent + generation * 7_919) % 40_000)}`;
  const host = agent + 1;
  const local = [`10.${(host >> 16) & 255}.${(host >> 8) & 255}.${host & 255}:${LISTEN_PORT}`, `[fd00::${host.toString(16)}]:${LISTEN_PORT}`];
  return { stun, local };
}

/**
 * The body the agent's endpoint publisher PATCHes when only its STUN mapping
 * moved (src/agent/status/endpoint-publisher.ts): every endpoint it
 * publishes, built by the agent's own publishedEndpoints; `symmetric_nat`
 * is left out because it did not change.
 */
export function endpointPatch(agent: number, generation: number): DevicePatch {
  const e = churnEndpoints(agent, generation);
  return { endpoints: publishedEndpoints([], e.local, [e.stun]) };
}

/** What the agents received and did during the step, from their counters' movement over it. */
export interface ChurnAccounting {
  /** Watch streams open for the step (every agent watches the whole organization). */
  watchers: number;
  /** Endpoint changes the server took (PATCHes answered 200). */
  changes: number;
  /** `change`/`patch`/`delete` events of every kind received. */
  events: number;
  /** By type and kind, e.g. "watch.events.change.device 400,000". */
  eventDetail: string;
  eventBytes: number;
  /** events ÷ (watchers × changes); NaN without changes. */
  eventsPerWatcherPerChange: number;
  /** eventBytes ÷ events; NaN without events. */
  meanEventBytes: number;
  /** Watch requests that listed a kind from the beginning, and 410 answers to a resume: each a full re-list. */
  relists: number;
  relistDetail: string;
  /** Other watch requests: resumes from each kind's revision (no re-list, but a stream was lost). */
  resumes: number;
  /** Tunnel status frames (the ACKs) sent. */
  statusFrames: number;
  errors: number;
  errorDetail: string;
}

function sumPrefixed(c: AgentCounters, prefix: string): number {
  let n = 0;
  for (const [k, v] of Object.entries(c)) if (k.startsWith(prefix)) n += v;
  return n;
}

/**
 * The step's accounting from the agents' counters moved over it (after −
 * before). The watch protocol does not coalesce events (docs/protocol.md
 * "Watch": a `change` carries one object at one revision, and nothing is
 * merged for a slow reader), so each endpoint change must reach each
 * watcher as exactly one event.
 */
export function churnAccounting(moved: AgentCounters, watchers: number, changes: number): ChurnAccounting {
  const events = sumPrefixed(moved, EVENTS_PREFIX);
  const eventBytes = sumPrefixed(moved, EVENT_BYTES_PREFIX);
  const byKind: AgentCounters = {};
  for (const [k, v] of Object.entries(moved)) if (k.startsWith(EVENTS_PREFIX)) byKind[k] = v;
  const lists = moved[COUNTER.watchLists] ?? 0;
  const gone = moved[COUNTER.http('watch', 410)] ?? 0;
  const compacted = moved[COUNTER.streamError('revision_compacted')] ?? 0;
  const errors = allErrors(moved);
  return {
    watchers,
    changes,
    events,
    eventDetail: describeCounters(byKind),
    eventBytes,
    eventsPerWatcherPerChange: watchers > 0 && changes > 0 ? events / (watchers * changes) : Number.NaN,
    meanEventBytes: events > 0 ? eventBytes / events : Number.NaN,
    relists: lists + gone,
    relistDetail: `${lists.toLocaleString('en-US')} lists from gt_revision 0, ${gone.toLocaleString('en-US')} answered 410 (${compacted.toLocaleString('en-US')} revision_compacted events)`,
    resumes: (moved[COUNTER.watchRequests] ?? 0) - lists,
    statusFrames: moved[COUNTER.statusFramesSent] ?? 0,
    errors: sumOf(errors),
    errorDetail: describeCounters(errors),
  };
}

/** (g)'s verdicts on the accounting; true is PASS. */
export interface ChurnVerdicts {
  /** Exactly one event per watcher per change: nothing lost, nothing repeated, nothing else sent. */
  oneEventPerChange: boolean;
  smallEvents: boolean;
  noRelists: boolean;
}

export function churnVerdicts(a: ChurnAccounting): ChurnVerdicts {
  return {
    oneEventPerChange: a.changes > 0 && a.watchers > 0 && a.events === a.watchers * a.changes,
    smallEvents: a.events > 0 && a.meanEventBytes <= CHURN_EVENT_BYTES_LIMIT,
    noRelists: a.relists === 0,
  };
}
