import { COUNTER, connectionFailures, describeCounters, diffCounters, errorResponses, sumOf, type AgentCounters } from '../load/agent-counters.js';
import type { AgentPool } from '../load/agent-pool.js';
import { log } from '../log.js';
import type { RestartableServer } from '../server/restartable-server.js';
import { maxOf, percentile } from '../stats.js';
import { describeStuck, STUCK_EXAMPLES } from './stuck-report.js';

/** A server restart under N connected agents. */
export interface RestartFigures {
  /** SIGTERM → the new process listening. */
  downMs: number;
  /** New process listening → the last agent's watch at its tails again; NaN when some didn't in time. */
  resumedMs: number;
  resumedP50Ms: number;
  /** SIGTERM → the last agent resumed. */
  totalMs: number;
  missingResumed: number;
  /** New process listening → the last tunnel open again; NaN when some didn't in time. */
  tunnelsMs: number;
  missingTunnels: number;
  /** Non-success HTTP answers to the agents (watch, tunnel upgrade, PUT) during the restart. */
  errorResponses: number;
  errorResponseDetail: string;
  /** Connections refused or reset, streams broken (expected while no server listens). */
  connectionFailures: number;
  connectionFailureDetail: string;
  /** `error` events on streams (the old server ending them with `unavailable` is expected). */
  streamErrorEvents: number;
  streamErrorDetail: string;
  retryAfterWaits: number;
  /** When some agents didn't resume in time: where their watches were (see describeStuck). */
  stuck?: string;
}

/** How long agents get to come back after the restart. */
export function resumeTimeoutMs(n: number): number {
  return 60_000 + 5 * n;
}

function prefixed(c: AgentCounters, prefix: string): AgentCounters {
  return Object.fromEntries(Object.entries(c).filter(([k]) => k.startsWith(prefix)));
}

/**
 * SIGTERM to the server, the same command again on the same data and port,
 * then waits until every agent's watch is back at its tails (with
 * `at_tail: true` that is its 200) and every tunnel is open again. Only
 * connections made after the new process was spawned count.
 */
export async function measureRestart(server: RestartableServer, pool: AgentPool, timeoutMs: number): Promise<RestartFigures> {
  const before = await pool.counters();
  log.info({ agents: pool.agents }, 'restarting the server');
  const t = await server.restart();
  const [ready, tunnels] = await Promise.all([pool.awaitField('ready', t.spawnAt, timeoutMs), pool.awaitField('tunnel', t.spawnAt, timeoutMs)]);
  const after = await pool.counters();
  const moved = diffCounters(after.counters, before.counters);
  const resumed = ready.map((x) => x - t.listeningAt);
  const reopened = tunnels.map((x) => x - t.listeningAt);
  const missingResumed = resumed.filter((x) => Number.isNaN(x)).length;
  const missingTunnels = reopened.filter((x) => Number.isNaN(x)).length;
  const stuck = missingResumed > 0 ? describeStuck(await pool.stuck(STUCK_EXAMPLES)) : undefined;
  if (stuck !== undefined) log.warn({ missingResumed, stuck }, 'agents did not resume after the restart in time');
  const responses = errorResponses(moved);
  const failures = connectionFailures(moved);
  const streamErrors = prefixed(moved, 'watch.error-event.');
  return {
    downMs: t.listeningAt - t.sigtermAt,
    resumedMs: missingResumed === 0 ? maxOf(resumed) : Number.NaN,
    resumedP50Ms: percentile(resumed, 50),
    totalMs: missingResumed === 0 ? maxOf(ready) - t.sigtermAt : Number.NaN,
    missingResumed,
    tunnelsMs: missingTunnels === 0 ? maxOf(reopened) : Number.NaN,
    missingTunnels,
    errorResponses: sumOf(responses),
    errorResponseDetail: describeCounters(responses),
    connectionFailures: sumOf(failures),
    connectionFailureDetail: describeCounters(failures),
    streamErrorEvents: sumOf(streamErrors),
    streamErrorDetail: describeCounters(streamErrors),
    retryAfterWaits: moved[COUNTER.retryAfterWaits] ?? 0,
    ...(stuck === undefined ? {} : { stuck }),
  };
}
