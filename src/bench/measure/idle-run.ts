import type { FleetApi } from '../http-api.js';
import { COUNTER, allErrors, describeCounters, diffCounters, sumOf } from '../load/agent-counters.js';
import type { AgentPool } from '../load/agent-pool.js';
import { log } from '../log.js';
import type { BenchPostgres } from '../server/postgres.js';
import type { RestartableServer } from '../server/restartable-server.js';
import { sleep } from '../../util/sleep.js';
import { describeStatements, totalStatements, writeStatements } from './db-statements.js';
import { sampleServer, serverDelta } from './fleet-probe.js';

/** N connected agents and no changes, for a while. */
export interface IdleFigures {
  seconds: number;
  agentsConnected: number;
  writeStatementsPerMinute: number;
  statementsPerMinute: number;
  statementDetail: string;
  /** Server CPU over the window, in cores (CPU seconds per second). */
  serverCores: number;
  databaseCores: number;
  /** What the agents sent meanwhile: status frames and PUTs (nothing changed, so ideally none). */
  agentReports: number;
  errors: number;
  errorDetail: string;
}

/** Reads the server's statements and CPU before and after `seconds` of doing nothing with N agents connected. */
export async function measureIdle(o: { server: RestartableServer; api: FleetApi; pg: BenchPostgres | undefined; pool: AgentPool; seconds: number; signal: AbortSignal }): Promise<IdleFigures> {
  log.info({ seconds: o.seconds, agents: o.pool.agents }, 'idle');
  const c0 = await o.pool.counters();
  const s0 = await sampleServer(o.server, o.api, o.pg);
  await sleep(o.seconds * 1000, o.signal);
  o.signal.throwIfAborted();
  const s1 = await sampleServer(o.server, o.api, o.pg);
  const c1 = await o.pool.counters();
  const d = serverDelta(s1, s0);
  const moved = diffCounters(c1.counters, c0.counters);
  const errors = allErrors(moved);
  const minutes = d.seconds / 60;
  return {
    seconds: d.seconds,
    agentsConnected: Math.min(c1.gauges.watchesOpen, c1.gauges.tunnelsOpen),
    writeStatementsPerMinute: writeStatements(d.statements) / minutes,
    statementsPerMinute: totalStatements(d.statements) / minutes,
    statementDetail: describeStatements(d.statements),
    serverCores: d.cpuSeconds / d.seconds,
    databaseCores: d.databaseCpuSeconds / d.seconds,
    agentReports: (moved[COUNTER.statusFramesSent] ?? 0) + (moved[COUNTER.putsSent] ?? 0),
    errors: sumOf(errors),
    errorDetail: describeCounters(errors),
  };
}
