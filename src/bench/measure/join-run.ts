import { COUNTER, allErrors, describeCounters, diffCounters, sumOf } from '../load/agent-counters.js';
import type { AgentTarget } from '../load/agent-messages.js';
import type { AgentPool } from '../load/agent-pool.js';
import { log } from '../log.js';
import { maxOf, percentile } from '../stats.js';
import { describeStuck, STUCK_EXAMPLES } from './stuck-report.js';

/** Agents joining at once in the paced mode. */
export const PACED_CONCURRENCY = 64;

export type JoinMode = 'paced' | 'all at once';

/** N fresh agents listing to their tails, once. Times in ms from the first agent's start. */
export interface JoinFigures {
  server: 'fleetplane' | 'raw floor';
  mode: JoinMode;
  agents: number;
  /** Until the last agent had every kind's tail; NaN when some didn't within the timeout. */
  allListedMs: number;
  p50Ms: number;
  /** Agents at their tails within the timeout. */
  listed: number;
  /** Non-200 answers, refused or reset connections, broken streams, error events (see agent-counters.ts). */
  errors: number;
  errorDetail: string;
  bodyBytesPerAgent: number;
  /** Tunnels open when the join ended (fleetplane only). */
  tunnelsOpen: number;
  /** When some agents weren't at their tails at the timeout: where their watches were (see describeStuck). */
  stuck?: string;
}

/**
 * Starts every agent of `pool` afresh against `target` (paced: at most 64
 * joining at a time; all at once: every agent at once) and waits until all
 * are at their tails or `timeoutMs`. Agents stay connected afterwards.
 */
export async function measureJoin(o: { pool: AgentPool; target: AgentTarget; server: JoinFigures['server']; mode: JoinMode; timeoutMs: number }): Promise<JoinFigures> {
  const n = o.pool.agents;
  const before = await o.pool.counters();
  log.info({ server: o.server, mode: o.mode, agents: n }, 'join');
  const r = await o.pool.join(o.target, o.mode === 'paced' ? PACED_CONCURRENCY : n, o.timeoutMs);
  const after = await o.pool.counters();
  const moved = diffCounters(after.counters, before.counters);
  const errors = allErrors(moved);
  const times = r.readyAt.map((t) => t - r.startedAt);
  const listed = times.filter((t) => !Number.isNaN(t)).length;
  let stuck: string | undefined;
  if (listed < n) {
    stuck = describeStuck(await o.pool.stuck(STUCK_EXAMPLES));
    log.warn({ server: o.server, mode: o.mode, listed, of: n, stuck }, 'join timed out with agents not at their tails');
  }
  return {
    server: o.server,
    mode: o.mode,
    agents: n,
    allListedMs: listed === n ? maxOf(times) : Number.NaN,
    p50Ms: percentile(times, 50),
    listed,
    errors: sumOf(errors),
    errorDetail: describeCounters(errors),
    bodyBytesPerAgent: (moved[COUNTER.bodyBytes] ?? 0) / Math.max(1, n),
    tunnelsOpen: after.gauges.tunnelsOpen,
    ...(stuck === undefined ? {} : { stuck }),
  };
}
