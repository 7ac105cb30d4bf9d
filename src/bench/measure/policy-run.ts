import { HEADERS, MEDIA, paths, type PolicyApplyResult } from '../../protocol/index.js';
import { ApiCallError, type FleetApi } from '../http-api.js';
import { diffCounters } from '../load/agent-counters.js';
import type { AckMode } from '../load/agent-messages.js';
import { log } from '../log.js';
import { sleep } from '../../util/sleep.js';
import { CHANGES } from './change-loop.js';
import { catchUp, type FleetCatchUp, type FleetStepOptions } from './fleet-catch-up.js';
import { churnAccounting, type ChurnAccounting } from './churn-accounting.js';
import { describeStatements, totalStatements } from './db-statements.js';
import { sampleServer, serverDelta } from './fleet-probe.js';
import { POLICY_GROUPS, policyDocument } from './policy-document.js';

/** One untimed PUT of the setup and the fleet converging on the head after it. */
export interface PolicySetupStep {
  /** The organization's head before the PUT and after its answer (a first document's tombstones included). */
  headBefore: number;
  headAfter: number;
  catchUp: FleetCatchUp;
}

/** One timed apply: a document changing every rule of the organization. */
export interface PolicyApply {
  shift: number;
  /** The revision the PUT answered with. */
  revision: number;
  /** How far the organization's head moved from before the PUT to after the last wait: 1 is one revision, one event. */
  revisionsTaken: number;
  /** Groups the answer's `changes` names (POLICY_GROUPS when every group changed). */
  groupsChanged: number;
  /** PUT round trip (parse, tests, compile, the write). */
  writeMs: number;
  catchUp: FleetCatchUp;
  /** Server CPU from the end of the /metrics scrape before the PUT to the start of the one after the last wait. */
  cpuSeconds: number;
  databaseCpuSeconds: number;
  scrapeCpuSeconds: number;
  statements: number;
  statementDetail: string;
  /** The server's own count of events written to watch streams, and its tail-cache fills, in the window. */
  serverEventsWritten: number;
  fillQueries: number;
  /** The agents' counters over the window, as (g) counts them, for this one change. */
  accounting: ChurnAccounting;
}

/** (h): an organization managed by a policy document takes documents that change every rule. */
export interface PolicyFigures {
  agents: number;
  ack: AckMode;
  /** Bytes of one timed document's YAML. */
  documentBytes: number;
  /** Setup: the generated document applied unchanged (the organization adopted, its group objects tombstoned). */
  adopt: PolicySetupStep;
  /** Setup: the bench's document at shift 0 (its groups replace the adopted ones). */
  first: PolicySetupStep;
  applies: PolicyApply[];
}

export type PolicyOptions = FleetStepOptions;

/** Between the setup and the timed applies: the last status batch written, the streams quiet. */
const SETTLE_MS = 1_000;
const GAP_MS = 200;

async function readDocument(api: FleetApi, org: string): Promise<{ text: string; etag: string }> {
  const res = await api.request('GET', paths.policy(org));
  const etag = res.headers[HEADERS.etag];
  if (res.status !== 200 || typeof etag !== 'string') throw new ApiCallError(res.status, res.body, 'GET policy');
  return { text: res.body, etag };
}

async function putDocument(api: FleetApi, org: string, text: string, etag: string): Promise<{ result: PolicyApplyResult; sentAt: number; doneAt: number }> {
  const res = await api.requestText('PUT', paths.policy(org), text, MEDIA.yaml, { [HEADERS.ifMatch]: etag });
  if (res.status !== 200) throw new ApiCallError(res.status, res.body, 'PUT policy');
  return { result: JSON.parse(res.body) as PolicyApplyResult, sentAt: res.sentAt, doneAt: res.doneAt };
}

/** One untimed PUT (If-Match the current ETag), then the fleet converging on the head after its answer. */
async function setupStep(o: PolicyOptions, text: string | undefined): Promise<PolicySetupStep> {
  const current = await readDocument(o.api, o.org);
  const headBefore = await o.api.headRevision(o.org);
  const put = await putDocument(o.api, o.org, text ?? current.text, current.etag);
  // A first document tombstones the group objects after its own write, before answering: wait for the head, not the PUT's revision.
  const headAfter = await o.api.headRevision(o.org);
  return { headBefore, headAfter, catchUp: await catchUp(o, headAfter, put.sentAt, o.ackTimeoutMs) };
}

async function timedApply(o: PolicyOptions, shift: number, etag: string): Promise<{ apply: PolicyApply; etag: string }> {
  const n = o.pool.agents;
  const text = policyDocument(shift);
  const head0 = await o.api.headRevision(o.org);
  const c0 = await o.pool.counters();
  const s0 = await sampleServer(o.server, o.api, o.pg);
  const put = await putDocument(o.api, o.org, text, etag);
  const r = put.result;
  const waited = await catchUp(o, r.revision, put.sentAt, o.ackTimeoutMs);
  const s1 = await sampleServer(o.server, o.api, o.pg);
  const c1 = await o.pool.counters();
  const head1 = await o.api.headRevision(o.org);
  const d = serverDelta(s1, s0);
  const apply: PolicyApply = {
    shift,
    revision: r.revision,
    revisionsTaken: head1 - head0,
    groupsChanged: r.changes.filter((c) => c.path.startsWith('/security_groups/')).length,
    writeMs: put.doneAt - put.sentAt,
    catchUp: waited,
    cpuSeconds: d.cpuSeconds,
    databaseCpuSeconds: d.databaseCpuSeconds,
    scrapeCpuSeconds: d.scrapeCpuSeconds,
    statements: totalStatements(d.statements),
    statementDetail: describeStatements(d.statements),
    serverEventsWritten: d.eventsWritten,
    fillQueries: d.fillQueries,
    accounting: churnAccounting(diffCounters(c1.counters, c0.counters), n, r.applied ? 1 : 0),
  };
  return { apply, etag: r.etag };
}

/**
 * (h), on an organization whose devices carry the document's tags: untimed,
 * adopt it (its generated document PUT back unchanged, with If-Match) and
 * apply the bench's document at shift 0, the fleet converging after each;
 * then CHANGES timed applies, one at a time, each shifting every port by
 * one more (so changing every rule), each waiting as the change loop does,
 * with server CPU, statements and the agents' counters read around it.
 */
export async function measurePolicy(o: PolicyOptions): Promise<PolicyFigures> {
  const n = o.pool.agents;
  log.info({ agents: n }, 'policy: adopting the organization');
  const adopt = await setupStep(o, undefined);
  log.info({ agents: n, groups: POLICY_GROUPS }, "policy: the bench's first document");
  const first = await setupStep(o, policyDocument(0));
  await sleep(SETTLE_MS, o.signal);
  o.signal.throwIfAborted();

  const applies: PolicyApply[] = [];
  let etag = (await readDocument(o.api, o.org)).etag;
  for (let shift = 1; shift <= CHANGES; shift++) {
    o.signal.throwIfAborted();
    const next = await timedApply(o, shift, etag);
    etag = next.etag;
    applies.push(next.apply);
    const a = next.apply;
    log.info({ apply: shift, revision: a.revision, converged: !Number.isNaN(a.catchUp.convergedMs), events: a.accounting.events, relists: a.accounting.relists }, 'policy apply');
    await sleep(GAP_MS, o.signal);
  }
  o.signal.throwIfAborted();
  return { agents: n, ack: o.ack, documentBytes: Buffer.byteLength(policyDocument(1)), adopt, first, applies };
}
