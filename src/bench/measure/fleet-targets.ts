import { fmt, fmtBytes } from '../format.js';
import type { TargetResult } from '../scenario.js';
import { spread } from '../stats.js';
import { CHANGES, type ChangeLoopResult } from './change-loop.js';
import { CHURN_EVENT_BYTES_LIMIT, CHURN_SHARE, churnVerdicts } from './churn-accounting.js';
import { count, ms, overChanges, seconds } from './fleet-cells.js';
import type { FleetPlan } from './fleet-plan.js';
import type { FleetRunFigures } from './fleet-run.js';
import type { JoinFigures, JoinMode } from './join-run.js';
import { POLICY_GROUPS, POLICY_RULES_PER_GROUP } from './policy-document.js';
import type { PolicyApply } from './policy-run.js';

/** The fleet loop's targets, stated for 10,000 agents. */
export const FLEET_TARGETS = {
  agents: 10_000,
  joinRatio: 1.5,
  restartMs: 15_000,
  convergedMs: 1_500,
  cpuSecondsPerChange: 1,
  ackStatements: 10,
  idleWritesPerSecond: 1,
  rssPerAgentBytes: 20 * 1024,
} as const;

export const TARGET_COLUMNS = ['storage', 'N', 'figure', 'measured', 'target', 'verdict'];

interface Check {
  figure: string;
  measured: string;
  target: string;
  value: number;
  limit: number;
  /** Undefined: not measured (the measured text says why). */
  pass: boolean | undefined;
}

function verdict(c: Check, n: number): string {
  const at = n === FLEET_TARGETS.agents ? '' : ` (target is for ${FLEET_TARGETS.agents.toLocaleString('en-US')})`;
  if (c.pass === undefined) return `FAIL: not measured${at}`;
  return `${c.pass ? 'pass' : 'FAIL'}${at}`;
}

function joinCheck(run: FleetRunFigures, mode: JoinMode): Check {
  const fleet = run.joins.find((j) => j.server === 'fleetplane' && j.mode === mode);
  const raw = run.joins.find((j) => j.server === 'raw floor' && j.mode === mode);
  const ratio = fleet && raw ? fleet.allListedMs / raw.allListedMs : Number.NaN;
  const errorsTarget = mode === 'all at once';
  const figure = `(a) join ${mode === 'paced' ? 'paced (64 at a time)' : 'all at once'}: all at their tails`;
  if (!fleet || !raw) return { figure, measured: 'not measured', target: `≤ ${FLEET_TARGETS.joinRatio}× raw floor`, value: Number.NaN, limit: FLEET_TARGETS.joinRatio, pass: undefined };
  const listed = (j: JoinFigures): string => (Number.isNaN(j.allListedMs) ? `timeout: ${count(j.listed)} of ${count(j.agents)} listed` : ms(j.allListedMs));
  return {
    figure,
    measured: `${listed(fleet)} vs raw floor ${listed(raw)} = ${fmt(ratio)}×; errors ${count(fleet.errors)} (raw ${count(raw.errors)})`,
    target: `≤ ${FLEET_TARGETS.joinRatio}× raw floor${errorsTarget ? ', 0 errors' : ''}`,
    value: ratio,
    limit: FLEET_TARGETS.joinRatio,
    pass: Number.isNaN(ratio) ? undefined : ratio <= FLEET_TARGETS.joinRatio && (!errorsTarget || fleet.errors === 0),
  };
}

function restartCheck(run: FleetRunFigures): Check {
  const r = run.restart;
  const target = `all resumed ≤ ${FLEET_TARGETS.restartMs / 1000} s, 0 error responses`;
  const figure = '(b) restart: listening again → all resumed';
  if (!r) return { figure, measured: 'not measured', target, value: Number.NaN, limit: FLEET_TARGETS.restartMs, pass: undefined };
  const resumed = Number.isNaN(r.resumedMs) ? `timeout: ${count(r.missingResumed)} not back` : ms(r.resumedMs);
  return {
    figure,
    measured: `${resumed} (SIGTERM → listening ${ms(r.downMs)}); error responses ${count(r.errorResponses)}`,
    target,
    value: r.resumedMs,
    limit: FLEET_TARGETS.restartMs,
    pass: Number.isNaN(r.resumedMs) ? false : r.resumedMs <= FLEET_TARGETS.restartMs && r.errorResponses === 0,
  };
}

function loopChecks(loop: ChangeLoopResult | undefined, n: number): Check[] {
  const label = '(c) ACK by tunnel';
  if (!loop) {
    const missing = (figure: string, target: string, limit: number): Check => ({ figure: `${label}: ${figure}`, measured: 'not measured', target, value: Number.NaN, limit, pass: undefined });
    return [
      missing('change → convergence at_head = N', `≤ ${FLEET_TARGETS.convergedMs} ms (median of 5)`, FLEET_TARGETS.convergedMs),
      missing('server CPU per change', `≤ ${FLEET_TARGETS.cpuSecondsPerChange} s`, FLEET_TARGETS.cpuSecondsPerChange),
      missing('database statements for the ACKs, per change', `≤ ${FLEET_TARGETS.ackStatements}`, FLEET_TARGETS.ackStatements),
    ];
  }
  const converged = loop.changes.map((c) => c.convergedMs);
  const conv = spread(converged);
  const allConverged = converged.every((x) => !Number.isNaN(x));
  const best = Math.max(...loop.changes.map((c) => (Number.isNaN(c.bestAtHead) ? 0 : c.bestAtHead)));
  const cpu = spread(loop.changes.map((c) => c.cpuSeconds));
  const acks = spread(loop.changes.map((c) => c.ackStatements));
  return [
    {
      figure: `${label}: change → convergence at_head = N`,
      measured: allConverged ? overChanges(converged, (x) => `${fmt(x)} ms`) : `${overChanges(converged, (x) => `${fmt(x)} ms`)}; best at_head ${count(best)} of ${count(n)}`,
      target: `≤ ${FLEET_TARGETS.convergedMs} ms (median of 5)`,
      value: conv.median,
      limit: FLEET_TARGETS.convergedMs,
      pass: allConverged ? conv.median <= FLEET_TARGETS.convergedMs : false,
    },
    {
      figure: `${label}: server CPU per change`,
      measured: overChanges(loop.changes.map((c) => c.cpuSeconds), seconds),
      target: `≤ ${FLEET_TARGETS.cpuSecondsPerChange} s`,
      value: cpu.median,
      limit: FLEET_TARGETS.cpuSecondsPerChange,
      pass: cpu.median <= FLEET_TARGETS.cpuSecondsPerChange,
    },
    {
      figure: `${label}: database statements for the ACKs, per change`,
      measured: `${overChanges(loop.changes.map((c) => c.ackStatements))} (status batches ${overChanges(loop.changes.map((c) => c.statusBatches))}; all statements ${overChanges(loop.changes.map((c) => c.statements))})`,
      target: `≤ ${FLEET_TARGETS.ackStatements}`,
      value: acks.median,
      limit: FLEET_TARGETS.ackStatements,
      // ACKs that never arrived cost no statements: that is no pass.
      pass: loop.changes.every((c) => c.missingAcked === 0) ? acks.median <= FLEET_TARGETS.ackStatements : false,
    },
  ];
}

/**
 * (g): convergence against (c)'s limit, the same wait from the PATCH that
 * took the organization's last revision; and the step's accounting.
 */
function churnChecks(run: FleetRunFigures): Check[] {
  const label = `(g) churn, ${Math.round(CHURN_SHARE * 100)}% of agents move their STUN endpoint at once`;
  const targets = {
    converged: `≤ ${FLEET_TARGETS.convergedMs} ms, every PATCH answered 200`,
    events: 'exactly 1.0 (no coalescing in the watch protocol)',
    bytes: `mean ≤ ${fmtBytes(CHURN_EVENT_BYTES_LIMIT)}`,
    relists: '0',
  };
  const c = run.churn;
  if (!c) {
    const missing = (figure: string, target: string, limit: number): Check => ({ figure: `${label}: ${figure}`, measured: 'not measured', target, value: Number.NaN, limit, pass: undefined });
    return [
      missing('last PATCH → convergence at_head = N', targets.converged, FLEET_TARGETS.convergedMs),
      missing('watch events per watcher per endpoint change', targets.events, 1),
      missing('bytes per change event', targets.bytes, CHURN_EVENT_BYTES_LIMIT),
      missing('re-lists by the agents during the step', targets.relists, 0),
    ];
  }
  const s = c.step;
  const a = c.accounting;
  const v = churnVerdicts(a);
  const allOk = s.ok === s.asked;
  const converged = Number.isNaN(s.convergedMs)
    ? `timeout: best at_head ${count(s.bestAtHead)} of ${count(run.n)}`
    : `${ms(s.convergedMs)} (from the first PATCH sent ${ms(s.convergedFromFirstSentMs)}; after the last answer ${ms(s.convergedFromLastAnswerMs)})`;
  return [
    {
      figure: `${label}: last PATCH → convergence at_head = N`,
      measured: `${converged}; PATCHes ${count(s.ok)} of ${count(s.asked)} answered 200${allOk ? '' : ` (${s.failureDetail})`}; server CPU ${seconds(c.cpuSeconds)}`,
      target: targets.converged,
      value: s.convergedMs,
      limit: FLEET_TARGETS.convergedMs,
      pass: Number.isNaN(s.convergedMs) ? false : allOk && s.convergedMs <= FLEET_TARGETS.convergedMs,
    },
    {
      figure: `${label}: watch events per watcher per endpoint change`,
      measured: `${fmt(a.eventsPerWatcherPerChange, 6)} = ${count(a.events)} events ÷ (${count(a.watchers)} watchers × ${count(a.changes)} changes); ${a.eventDetail}`,
      target: targets.events,
      value: a.eventsPerWatcherPerChange,
      limit: 1,
      pass: v.oneEventPerChange,
    },
    {
      figure: `${label}: bytes per change event`,
      measured: `mean ${fmt(a.meanEventBytes)} B (${count(a.eventBytes)} B ÷ ${count(a.events)} events); the PATCH answers as watch lines: mean ${fmt(s.predictedLineBytesMean)} B, largest ${fmt(s.predictedLineBytesMax)} B`,
      target: targets.bytes,
      value: a.meanEventBytes,
      limit: CHURN_EVENT_BYTES_LIMIT,
      pass: v.smallEvents,
    },
    {
      figure: `${label}: re-lists by the agents during the step`,
      measured: `${count(a.relists)}: ${a.relistDetail}; resumes ${count(a.resumes)}; agent-side errors ${count(a.errors)}${a.errors > 0 ? ` (${a.errorDetail})` : ''}`,
      target: targets.relists,
      value: a.relists,
      limit: 0,
      pass: v.noRelists,
    },
  ];
}

/** One revision, and one event per watcher for it. */
function oneEvent(a: PolicyApply): boolean {
  return a.revisionsTaken === 1 && churnVerdicts(a.accounting).oneEventPerChange;
}

/**
 * (h): against (c)'s limits, as (c) measures them (convergence from sending
 * the write, median; server CPU per change, median), and (g)'s accounting
 * per apply: one revision, one event per watcher, no re-list.
 */
function policyChecks(run: FleetRunFigures): Check[] {
  const label = `(h) policy apply, ${POLICY_GROUPS} groups × ${POLICY_RULES_PER_GROUP} rules all changed`;
  const targets = {
    converged: `≤ ${FLEET_TARGETS.convergedMs} ms (median of ${CHANGES}), every group changed`,
    cpu: `≤ ${FLEET_TARGETS.cpuSecondsPerChange} s`,
    events: 'exactly 1.0, one revision per apply',
    relists: '0',
  };
  const applies = run.policy?.applies ?? [];
  const [first] = applies;
  if (!first) {
    const missing = (figure: string, target: string, limit: number): Check => ({ figure: `${label}: ${figure}`, measured: 'not measured', target, value: Number.NaN, limit, pass: undefined });
    return [
      missing('PUT → convergence at_head = N', targets.converged, FLEET_TARGETS.convergedMs),
      missing('server CPU per apply', targets.cpu, FLEET_TARGETS.cpuSecondsPerChange),
      missing('watch events per watcher per apply', targets.events, 1),
      missing('re-lists by the agents during the applies', targets.relists, 0),
    ];
  }
  const converged = applies.map((a) => a.catchUp.convergedMs);
  const allConverged = converged.every((x) => !Number.isNaN(x));
  const allGroups = applies.every((a) => a.groupsChanged === POLICY_GROUPS);
  const best = Math.min(...applies.map((a) => (Number.isNaN(a.catchUp.bestAtHead) ? 0 : a.catchUp.bestAtHead)));
  const cpu = applies.map((a) => a.cpuSeconds);
  const shown = applies.find((a) => !oneEvent(a)) ?? first;
  const relists = applies.reduce((t, a) => t + a.accounting.relists, 0);
  const errors = applies.reduce((t, a) => t + a.accounting.errors, 0);
  return [
    {
      figure: `${label}: PUT → convergence at_head = N`,
      measured:
        `${overChanges(converged, (x) => `${fmt(x)} ms`)}${allConverged ? '' : `; lowest best at_head ${count(best)} of ${count(run.n)}`}; ` +
        `groups changed ${overChanges(applies.map((a) => a.groupsChanged), count)} of ${POLICY_GROUPS}; PUT round trip ${overChanges(applies.map((a) => a.writeMs), ms)}`,
      target: targets.converged,
      value: spread(converged).median,
      limit: FLEET_TARGETS.convergedMs,
      pass: allConverged && allGroups ? spread(converged).median <= FLEET_TARGETS.convergedMs : false,
    },
    {
      figure: `${label}: server CPU per apply`,
      measured: overChanges(cpu, seconds),
      target: targets.cpu,
      value: spread(cpu).median,
      limit: FLEET_TARGETS.cpuSecondsPerChange,
      pass: spread(cpu).median <= FLEET_TARGETS.cpuSecondsPerChange,
    },
    {
      figure: `${label}: watch events per watcher per apply`,
      measured:
        `${overChanges(applies.map((a) => a.accounting.eventsPerWatcherPerChange), (x) => fmt(x, 6))}; revisions per apply ${overChanges(applies.map((a) => a.revisionsTaken), count)}; ` +
        `apply ${shown.shift}${oneEvent(shown) ? '' : ', off'}: ${count(shown.accounting.events)} events ÷ ${count(shown.accounting.watchers)} watchers; ${shown.accounting.eventDetail}; mean ${fmt(shown.accounting.meanEventBytes)} B`,
      target: targets.events,
      value: shown.accounting.eventsPerWatcherPerChange,
      limit: 1,
      pass: applies.every(oneEvent),
    },
    {
      figure: `${label}: re-lists by the agents during the applies`,
      measured: `${count(relists)} over ${applies.length} applies; agent-side errors ${count(errors)}${errors > 0 ? ` (${applies.map((a) => a.accounting.errorDetail).filter((x) => x !== '').join('; ')})` : ''}`,
      target: targets.relists,
      value: relists,
      limit: 0,
      pass: relists === 0,
    },
  ];
}

function idleCheck(run: FleetRunFigures): Check {
  const figure = '(d) idle: database write statements';
  const target = `≤ ${FLEET_TARGETS.idleWritesPerSecond} per second`;
  if (!run.idle) return { figure, measured: 'not measured', target, value: Number.NaN, limit: FLEET_TARGETS.idleWritesPerSecond, pass: undefined };
  const perSecond = run.idle.writeStatementsPerMinute / 60;
  return {
    figure,
    measured: `${fmt(run.idle.writeStatementsPerMinute)}/min = ${fmt(perSecond)}/s over ${fmt(run.idle.seconds)} s; server ${fmt(run.idle.serverCores)} cores`,
    target,
    value: perSecond,
    limit: FLEET_TARGETS.idleWritesPerSecond,
    pass: perSecond <= FLEET_TARGETS.idleWritesPerSecond,
  };
}

function growthText(byKind: Record<string, number>): string {
  return Object.entries(byKind)
    .sort((a, b) => b[1] - a[1])
    .map(([kind, bytes]) => `${kind} ${bytes < 0 ? '−' : '+'}${fmtBytes(Math.abs(bytes))}`)
    .join(', ');
}

function memoryCheck(run: FleetRunFigures): Check {
  const figure = '(e) server RSS per connected agent';
  const target = `≤ ${fmtBytes(FLEET_TARGETS.rssPerAgentBytes)}`;
  const m = run.memory;
  if (!m) return { figure, measured: 'not measured', target, value: Number.NaN, limit: FLEET_TARGETS.rssPerAgentBytes, pass: undefined };
  const rssSum = `RSS summed ${fmtBytes(m.bytesPerConnection)} (after GC ${fmtBytes(m.bytesPerConnectionAfterGc)})`;
  // The tree's memory counted once: summed RSS counts a page every process of the tree maps (the embedded PostgreSQL's shared buffers) once per process.
  const p = run.memoryPss;
  const value = p?.perAgent ?? m.bytesPerConnection;
  return {
    figure,
    measured: p
      ? `${fmtBytes(p.perAgent)} PSS after the idle window (after GC ${fmtBytes(p.perAgentAfterGc)}); just after the join ${fmtBytes(run.pssPerAgentAfterJoin ?? Number.NaN)} PSS; ${rssSum}; tree PSS ${fmtBytes(p.idleBytes)} → ${fmtBytes(p.heldBytes)} (${growthText(p.growthByKind)})`
      : `${rssSum}; RSS ${fmtBytes(m.rssIdleBytes)} → ${fmtBytes(m.rssHeldBytes)}`,
    target,
    value,
    limit: FLEET_TARGETS.rssPerAgentBytes,
    pass: value <= FLEET_TARGETS.rssPerAgentBytes,
  };
}

/** Rows of the targets table and the TargetResults of one run. */
export function runTargets(run: FleetRunFigures): { rows: string[][]; targets: TargetResult[] } {
  const checks = [joinCheck(run, 'paced'), joinCheck(run, 'all at once'), restartCheck(run), ...loopChecks(run.tunnel, run.n), idleCheck(run), memoryCheck(run), ...churnChecks(run), ...policyChecks(run)];
  const n = count(run.n);
  return {
    rows: checks.map((c) => [run.storage, n, c.figure, c.measured, c.target, verdict(c, run.n)]),
    targets: checks.map((c) => ({
      name: `${run.storage}, ${n} agents: ${c.figure}`,
      target: c.target + (run.n === FLEET_TARGETS.agents ? '' : ` (stated for ${FLEET_TARGETS.agents.toLocaleString('en-US')} agents)`),
      measured: c.value,
      limit: c.limit,
      pass: c.pass === true,
      detail: c.measured,
    })),
  };
}

/** The row a configuration that can't run here gets, instead of a smaller run. */
export function notRunRow(plan: FleetPlan): string[] {
  return [plan.storage, count(plan.n), 'all', plan.reason, '–', 'not run'];
}
