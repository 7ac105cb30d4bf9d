import { allErrors, describeCounters, diffCounters, sumOf } from '../load/agent-counters.js';
import type { AckMode } from '../load/agent-messages.js';
import { log } from '../log.js';
import { sleep } from '../../util/sleep.js';
import { catchUp, type FleetCatchUp, type FleetStepOptions } from './fleet-catch-up.js';
import { describeStatements, totalStatements, writeStatements } from './db-statements.js';
import { sampleServer, serverDelta } from './fleet-probe.js';
import { patchGroup, type StatementBaseline } from './statement-baseline.js';

/** One change, as N agents and the server saw it. Times in ms from sending the PATCH. */
export interface ChangeFigures extends FleetCatchUp {
  revision: number;
  writeMs: number;
  /** Server CPU from the end of the bench's /metrics scrape before the PATCH to the start of the one after convergence. */
  cpuSeconds: number;
  databaseCpuSeconds: number;
  /** Server CPU of the bench's /metrics scrape after convergence: its own cost, outside `cpuSeconds`. */
  scrapeCpuSeconds: number;
  statements: number;
  writeStatements: number;
  /**
   * The statements the ACKs cost: the window's INSERT/UPDATE/DELETE
   * statements (a status batch is one, reads included), minus the change's
   * own (baseline) and the idle write rate × the window's length. Reads
   * the ACKs set off for the convergence view are not ACK statements: they
   * are in `statements`.
   */
  ackStatements: number;
  polls: number;
  statusBatches: number;
  statementDetail: string;
}

export interface ChangeLoopResult {
  ack: AckMode;
  changes: ChangeFigures[];
  /** Agent-side errors over the whole loop (see agent-counters.ts). */
  errors: number;
  errorDetail: string;
  notes: string[];
}

export const CHANGES = 5;
/** After a change whose ACKs never came at all, later changes wait only this long for them. */
export const SILENT_ACK_TIMEOUT_MS = 2_000;
const GAP_MS = 200;

/** How long to wait for N agents' ACKs of one change (and for convergence): generous, bounded. */
export function ackTimeoutMs(n: number): number {
  return 10_000 + 2 * n;
}

/**
 * CHANGES changes, one at a time: PATCH the security group's description,
 * then wait (concurrently, each bounded) until every agent has the new
 * revision, every agent's ACK of it is confirmed, and the convergence
 * reports at_head = N for it. Server CPU and statements are read around
 * each change.
 */
export async function changeLoop(
  o: FleetStepOptions & {
    groupId: string;
    baseline: StatementBaseline;
    /** Write statements per second with nothing happening (from the idle phase), subtracted per window. */
    backgroundWritesPerSecond: number;
  },
): Promise<ChangeLoopResult> {
  const n = o.pool.agents;
  const notes: string[] = [];
  const changes: ChangeFigures[] = [];
  let ackWait = o.ackTimeoutMs;
  const c0 = await o.pool.counters();
  for (let i = 0; i < CHANGES; i++) {
    o.signal.throwIfAborted();
    const s0 = await sampleServer(o.server, o.api, o.pg);
    const polls0 = o.follower.polls;
    const w = await patchGroup(o.api, o.org, o.groupId, `fleet-${o.ack}-${i}-${Date.now().toString(36)}`);
    const waited = await catchUp(o, w.revision, w.sentAt, ackWait);
    const s1 = await sampleServer(o.server, o.api, o.pg);
    const d = serverDelta(s1, s0);
    const polls = o.follower.polls - polls0;
    const { missingReceived, missingAcked } = waited;
    const total = totalStatements(d.statements);
    const writes = writeStatements(d.statements);
    changes.push({
      revision: w.revision,
      writeMs: w.doneAt - w.sentAt,
      ...waited,
      cpuSeconds: d.cpuSeconds,
      databaseCpuSeconds: d.databaseCpuSeconds,
      scrapeCpuSeconds: d.scrapeCpuSeconds,
      statements: total,
      writeStatements: writes,
      ackStatements: writes - writeStatements(o.baseline.perWrite) - o.backgroundWritesPerSecond * d.seconds,
      polls,
      statusBatches: d.statusBatches,
      statementDetail: describeStatements(d.statements),
    });
    log.info({ ack: o.ack, change: i + 1, revision: w.revision, missingReceived, missingAcked, converged: !Number.isNaN(waited.convergedMs) }, 'change');
    if (i === 0 && missingAcked === n && ackWait > SILENT_ACK_TIMEOUT_MS) {
      ackWait = SILENT_ACK_TIMEOUT_MS;
      notes.push(
        `ACK by ${o.ack}: not one of ${n.toLocaleString('en-US')} agents had its ACK of change 1 confirmed within ${Math.round(o.ackTimeoutMs / 1000)} s` +
          (o.ack === 'tunnel' ? ' (no status_ack frames: the server does not answer tunnel status frames yet?)' : '') +
          `; changes 2–${CHANGES} waited only ${SILENT_ACK_TIMEOUT_MS / 1000} s for ACKs and convergence.`,
      );
    }
    await sleep(GAP_MS, o.signal);
    o.signal.throwIfAborted();
  }
  const c1 = await o.pool.counters();
  const errors = allErrors(diffCounters(c1.counters, c0.counters));
  return { ack: o.ack, changes, errors: sumOf(errors), errorDetail: describeCounters(errors), notes };
}
