/**
 * The fleet catching up with one revision, as (c), (g) and (h) wait for it:
 * every agent has it, every ACK of it is in, a convergence report has it
 * with at_head = N; each bounded, all three at once.
 */
import type { AckMode } from '../load/agent-messages.js';
import type { AgentPool } from '../load/agent-pool.js';
import type { BenchPostgres } from '../server/postgres.js';
import type { RestartableServer } from '../server/restartable-server.js';
import type { FleetApi } from '../http-api.js';
import { maxOf, percentile } from '../stats.js';
import type { ConvergenceFollower } from './convergence-follower.js';
import { describeStuck, STUCK_EXAMPLES } from './stuck-report.js';

/** Most a change waits for every agent to have it. */
export const RECEIVE_TIMEOUT_MS = 30_000;

/** What a step after the joins works with: the running fleet and its organization. */
export interface FleetStepOptions {
  server: RestartableServer;
  api: FleetApi;
  pg: BenchPostgres | undefined;
  pool: AgentPool;
  follower: ConvergenceFollower;
  org: string;
  ack: AckMode;
  ackTimeoutMs: number;
  signal: AbortSignal;
}

/** Times in ms from sending the write that took the revision. */
export interface FleetCatchUp {
  /** Until the last agent had the revision; NaN when some didn't within the timeout. */
  receivedMs: number;
  receivedP50Ms: number;
  missingReceived: number;
  /** Until the last agent's ACK was confirmed (status_ack, or PUT answered 200); NaN when some weren't. */
  ackedMs: number;
  missingAcked: number;
  /** Until a convergence report had this revision (or a later one) and at_head = N; NaN when none did in time. */
  convergedMs: number;
  /** Largest at_head reported for this revision (or a later one) while waiting. */
  bestAtHead: number;
  /** Some of the agents that never had it, when some didn't. */
  stuck?: string;
}

/** Waits for the fleet to catch up with `revision`, written at `sentAt`; ACKs and convergence for at most `ackTimeoutMs`. */
export async function catchUp(o: Pick<FleetStepOptions, 'pool' | 'follower'>, revision: number, sentAt: number, ackTimeoutMs: number): Promise<FleetCatchUp> {
  const n = o.pool.agents;
  let bestAtHead = Number.NaN;
  const [seen, acked, converged] = await Promise.all([
    o.pool.awaitField('seen', revision, RECEIVE_TIMEOUT_MS),
    o.pool.awaitField('acked', revision, ackTimeoutMs),
    o.follower.waitFor((r) => {
      if (r.revision < revision) return false;
      bestAtHead = Number.isNaN(bestAtHead) ? r.atHead : Math.max(bestAtHead, r.atHead);
      return r.atHead >= n;
    }, ackTimeoutMs),
  ]);
  const received = seen.map((t) => t - sentAt);
  const ackTimes = acked.map((t) => t - sentAt);
  const missingReceived = received.filter((t) => Number.isNaN(t)).length;
  const missingAcked = ackTimes.filter((t) => Number.isNaN(t)).length;
  const stuck = missingReceived > 0 ? describeStuck(await o.pool.stuck(STUCK_EXAMPLES)) : undefined;
  return {
    receivedMs: missingReceived === 0 ? maxOf(received) : Number.NaN,
    receivedP50Ms: percentile(received, 50),
    missingReceived,
    ackedMs: missingAcked === 0 ? maxOf(ackTimes) : Number.NaN,
    missingAcked,
    convergedMs: converged ? converged.at - sentAt : Number.NaN,
    bestAtHead,
    ...(stuck === undefined ? {} : { stuck }),
  };
}
