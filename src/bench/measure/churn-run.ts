import { describeCounters, diffCounters } from '../load/agent-counters.js';
import type { AckMode, PatchOutcome } from '../load/agent-messages.js';
import { log } from '../log.js';
import { maxOf } from '../stats.js';
import { sleep } from '../../util/sleep.js';
import { catchUp, type FleetCatchUp, type FleetStepOptions } from './fleet-catch-up.js';
import { churnAccounting, churnAgents, endpointPatch, type ChurnAccounting } from './churn-accounting.js';
import { describeStatements, totalStatements } from './db-statements.js';
import { sampleServer, serverDelta } from './fleet-probe.js';

/**
 * One round of endpoint changes: the PATCHes, and the fleet catching up with
 * the last of them (FleetCatchUp's times are from sending the PATCH that took
 * `lastRevision`).
 */
export interface ChurnRound extends FleetCatchUp {
  asked: number;
  /** PATCHes answered 200 (each took a revision). */
  ok: number;
  /** The others, by status or error. */
  failureDetail: string;
  /** The highest revision the PATCHes took: the organization's after the last PATCH. */
  lastRevision: number;
  firstRevision: number;
  /** First PATCH handed to its pool → last answer in. */
  writeSpanMs: number;
  /** The convergence instant, from the first PATCH sent and from the last answer received. */
  convergedFromFirstSentMs: number;
  convergedFromLastAnswerMs: number;
  /** Bytes of the watch line each answered device should make (its answer without `status`). */
  predictedLineBytesMean: number;
  predictedLineBytesMax: number;
}

/** (g): 10% of the agents change their published STUN endpoint at once. */
export interface ChurnFigures {
  agents: number;
  ack: AckMode;
  /** An example body, as sent (the first changing agent's). */
  exampleBody: string;
  /** Before the step, unmeasured: the same agents publish their first STUN endpoint, so that the step changes one. */
  first: ChurnRound;
  step: ChurnRound;
  cpuSeconds: number;
  databaseCpuSeconds: number;
  /** The simulated agents' worker processes, over the same window: they share the machine's cores with the server. */
  agentsCpuSeconds: number;
  scrapeCpuSeconds: number;
  statements: number;
  statementDetail: string;
  statusBatches: number;
  /** The server's own count of device PATCHes answered in the window, and their mean time in it (request histogram). */
  serverPatches: number;
  serverPatchMeanMs: number;
  /** Events the server wrote to watch streams, and its tail-cache fill queries, in the window. */
  serverEventsWritten: number;
  fillQueries: number;
  accounting: ChurnAccounting;
}

/** Between the first publication and the step: the last status batch written, the streams quiet. */
const SETTLE_MS = 1_000;

function failures(outcomes: readonly PatchOutcome[]): string {
  const by: Record<string, number> = {};
  for (const o of outcomes) {
    if (o.status === 200) continue;
    const key = o.status === 0 ? `connection: ${o.error ?? 'failed'}` : `HTTP ${o.status}${o.error ? `: ${o.error.slice(0, 80)}` : ''}`;
    by[key] = (by[key] ?? 0) + 1;
  }
  return describeCounters(by);
}

/**
 * The chosen agents each PATCH their own device's endpoints (generation
 * `generation`), all at once; then the fleet catches up with the highest
 * revision they took, as it does with one change (catchUp).
 */
async function publishRound(o: ChurnOptions, chosen: readonly number[], generation: number): Promise<ChurnRound> {
  const n = o.pool.agents;
  const outcomes = await o.pool.patchOwnDevices(
    o.org,
    chosen.map((agent) => ({ agent, body: endpointPatch(agent, generation) })),
  );
  const ok = outcomes.filter((x) => x.status === 200);
  const last = ok.reduce<PatchOutcome | undefined>((best, x) => (best === undefined || x.revision > best.revision ? x : best), undefined);
  const firstSent = Math.min(...outcomes.map((x) => x.sentAt).filter((t) => !Number.isNaN(t)));
  const lastAnswer = maxOf(outcomes.map((x) => x.doneAt));
  const lineBytes = ok.map((x) => x.lineBytes);
  const base = {
    asked: outcomes.length,
    ok: ok.length,
    failureDetail: failures(outcomes),
    firstRevision: Math.min(...ok.map((x) => x.revision)),
    writeSpanMs: lastAnswer - firstSent,
    predictedLineBytesMean: lineBytes.length > 0 ? lineBytes.reduce((a, b) => a + b, 0) / lineBytes.length : Number.NaN,
    predictedLineBytesMax: maxOf(lineBytes),
  };
  if (!last) {
    const missed: FleetCatchUp = { receivedMs: Number.NaN, receivedP50Ms: Number.NaN, missingReceived: n, ackedMs: Number.NaN, missingAcked: n, convergedMs: Number.NaN, bestAtHead: Number.NaN };
    return { ...base, ...missed, lastRevision: Number.NaN, firstRevision: Number.NaN, convergedFromFirstSentMs: Number.NaN, convergedFromLastAnswerMs: Number.NaN };
  }
  const waited = await catchUp(o, last.revision, last.sentAt, o.ackTimeoutMs);
  return {
    ...base,
    ...waited,
    lastRevision: last.revision,
    convergedFromFirstSentMs: waited.convergedMs + (last.sentAt - firstSent),
    convergedFromLastAnswerMs: waited.convergedMs + (last.sentAt - lastAnswer),
  };
}

export type ChurnOptions = FleetStepOptions;

/**
 * (g): the same 10% of the agents first publish a STUN endpoint (not
 * measured), then all move it at once. Over the step (from the server
 * sample before the PATCHes to the one after the last wait): server CPU
 * and statements, and the agents' counters: events received per watcher
 * per change and their bytes, re-lists, status frames, errors.
 */
export async function measureChurn(o: ChurnOptions): Promise<ChurnFigures> {
  const n = o.pool.agents;
  const chosen = churnAgents(n);
  log.info({ agents: n, changing: chosen.length }, 'churn: first endpoints');
  const first = await publishRound(o, chosen, 0);
  await sleep(SETTLE_MS, o.signal);
  o.signal.throwIfAborted();

  log.info({ agents: n, changing: chosen.length }, 'churn: endpoints move');
  const c0 = await o.pool.counters();
  const s0 = await sampleServer(o.server, o.api, o.pg);
  const agentsCpu0 = o.pool.cpuSeconds();
  const step = await publishRound(o, chosen, 1);
  const agentsCpu1 = o.pool.cpuSeconds();
  const s1 = await sampleServer(o.server, o.api, o.pg);
  const c1 = await o.pool.counters();
  const d = serverDelta(s1, s0);
  const accounting = churnAccounting(diffCounters(c1.counters, c0.counters), n, step.ok);
  log.info({ converged: !Number.isNaN(step.convergedMs), events: accounting.events, relists: accounting.relists }, 'churn');
  return {
    agents: n,
    ack: o.ack,
    exampleBody: JSON.stringify(endpointPatch(chosen[0] ?? 0, 1)),
    first,
    step,
    cpuSeconds: d.cpuSeconds,
    databaseCpuSeconds: d.databaseCpuSeconds,
    agentsCpuSeconds: agentsCpu1 - agentsCpu0,
    scrapeCpuSeconds: d.scrapeCpuSeconds,
    statements: totalStatements(d.statements),
    statementDetail: describeStatements(d.statements),
    statusBatches: d.statusBatches,
    serverPatches: d.devicePatches,
    serverPatchMeanMs: d.devicePatches > 0 ? (d.devicePatchSeconds / d.devicePatches) * 1000 : Number.NaN,
    serverEventsWritten: d.eventsWritten,
    fillQueries: d.fillQueries,
    accounting,
  };
}
