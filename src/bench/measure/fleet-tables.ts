import { fmt, fmtBytes } from '../format.js';
import type { Table } from '../scenario.js';
import type { ChangeFigures, ChangeLoopResult } from './change-loop.js';
import { CHURN_SHARE } from './churn-accounting.js';
import type { ChurnRound } from './churn-run.js';
import { count, ms, overChanges, seconds } from './fleet-cells.js';
import type { AckCatchUp, FleetRunFigures } from './fleet-run.js';
import type { OnlineWait } from './online-wait.js';
import { POLICY_GROUPS, POLICY_RULES_PER_GROUP } from './policy-document.js';
import type { PolicyApply, PolicySetupStep } from './policy-run.js';

type Row = string[];

function loopCell(loop: ChangeLoopResult | undefined, pick: (c: ChangeFigures) => number, f?: (n: number) => string): string {
  return loop ? overChanges(loop.changes.map(pick), f) : 'not measured';
}

function missingCell(loop: ChangeLoopResult | undefined, pick: (c: ChangeFigures) => number, n: number): string {
  if (!loop) return 'not measured';
  const worst = Math.max(...loop.changes.map(pick));
  return worst === 0 ? '0' : `up to ${count(worst)} of ${count(n)}`;
}

/** (c) next to (f): the same 5-change loop with ACKs by tunnel frame and by PUT. */
export function changeTable(runs: readonly FleetRunFigures[]): Table {
  const rows: Row[] = [];
  for (const r of runs) {
    const both = (figure: string, pick: (l: ChangeLoopResult | undefined) => string): void => {
      rows.push([r.storage, count(r.n), figure, pick(r.tunnel), pick(r.put)]);
    };
    both('write (PATCH round trip)', (l) => loopCell(l, (c) => c.writeMs, ms));
    both('→ all N received', (l) => loopCell(l, (c) => c.receivedMs, ms));
    both('  agents missing it', (l) => missingCell(l, (c) => c.missingReceived, r.n));
    both('→ all N ACKed (PUT answered; frame sent)', (l) => loopCell(l, (c) => c.ackedMs, ms));
    both('  agents not ACKed', (l) => missingCell(l, (c) => c.missingAcked, r.n));
    both('→ convergence at_head = N', (l) => loopCell(l, (c) => c.convergedMs, ms));
    both('  best at_head seen', (l) => loopCell(l, (c) => c.bestAtHead, count));
    both('server CPU per change', (l) => loopCell(l, (c) => c.cpuSeconds, seconds));
    if (r.storage === 'postgresql') both('PostgreSQL CPU per change', (l) => loopCell(l, (c) => c.databaseCpuSeconds, seconds));
    else both('  of which its embedded PostgreSQL', (l) => loopCell(l, (c) => c.databaseCpuSeconds, seconds));
    both("  the bench's /metrics scrape, not counted above", (l) => loopCell(l, (c) => c.scrapeCpuSeconds, seconds));
    both('statements per change (all)', (l) => loopCell(l, (c) => c.statements));
    both('  of which INSERT/UPDATE/DELETE', (l) => loopCell(l, (c) => c.writeStatements));
    both('  for the ACKs (writes beyond the change\'s own)', (l) => loopCell(l, (c) => c.ackStatements));
    both('  by label, change 1', (l) => l?.changes[0]?.statementDetail ?? 'not measured');
    both('status batches per change', (l) => loopCell(l, (c) => c.statusBatches));
    both('convergence polls per change', (l) => loopCell(l, (c) => c.polls));
    both('agent-side errors over the 5 changes', (l) => (l ? `${count(l.errors)}${l.errors > 0 ? `: ${l.errorDetail}` : ''}` : 'not measured'));
  }
  return {
    title: '(c) vs (f): 5 changes (PATCH of a security group), one at a time; median (min–max) over the changes; ms from sending the PATCH',
    columns: ['storage', 'N', 'figure', 'ACK by tunnel frame (c)', 'ACK by PUT (f)'],
    rows,
  };
}

function within(round: ChurnRound, value: number, missing: number, n: number): string {
  if (Number.isNaN(round.lastRevision)) return 'not measured: no PATCH was answered 200';
  return Number.isNaN(value) ? `timeout: ${count(missing)} of ${count(n)} not there` : ms(value);
}

function convergedWithin(round: ChurnRound, n: number): string {
  if (Number.isNaN(round.lastRevision)) return 'not measured: no PATCH was answered 200';
  return Number.isNaN(round.convergedMs) ? `timeout: best at_head ${count(round.bestAtHead)} of ${count(n)}` : ms(round.convergedMs);
}

/** (g): the endpoint churn, step by step. */
export function churnTable(runs: readonly FleetRunFigures[]): Table {
  const rows: Row[] = [];
  for (const r of runs) {
    const c = r.churn;
    if (!c) continue;
    const add = (figure: string, value: string): void => {
      rows.push([r.storage, count(r.n), figure, value]);
    };
    const s = c.step;
    const a = c.accounting;
    add('agents moving their STUN endpoint at once', `${count(s.asked)} of ${count(c.agents)} (${Math.round(CHURN_SHARE * 100)}%), ACKs by ${c.ack}`);
    add('PATCH body (the first of them)', c.exampleBody);
    add('before: the same agents publish a first one; last PATCH → at_head = N', `${convergedWithin(c.first, r.n)}; ${count(c.first.ok)} of ${count(c.first.asked)} answered 200`);
    add('PATCHes answered 200', `${count(s.ok)} of ${count(s.asked)}${s.ok === s.asked ? '' : `: ${s.failureDetail}`}; revisions ${count(s.firstRevision)}–${count(s.lastRevision)}`);
    add('first PATCH sent → last answered', ms(s.writeSpanMs));
    add('  in the server: PATCHes answered, mean time from request to answer', `${count(c.serverPatches)}, ${ms(c.serverPatchMeanMs)}`);
    add('last PATCH → all N received it (p50)', `${within(s, s.receivedMs, s.missingReceived, r.n)} (${ms(s.receivedP50Ms)})`);
    add('last PATCH → all N ACKed it (frame sent)', within(s, s.ackedMs, s.missingAcked, r.n));
    add('last PATCH → convergence at_head = N', convergedWithin(s, r.n));
    add('  from the first PATCH sent / after the last answer', `${ms(s.convergedFromFirstSentMs)} / ${ms(s.convergedFromLastAnswerMs)}`);
    add('  best at_head seen', count(s.bestAtHead));
    add('server CPU for the step', `${seconds(c.cpuSeconds)}, ${r.storage === 'postgresql' ? 'PostgreSQL apart' : 'of which its embedded PostgreSQL'} ${seconds(c.databaseCpuSeconds)}; the closing /metrics scrape ${seconds(c.scrapeCpuSeconds)}, not counted; the simulated agents ${seconds(c.agentsCpuSeconds)}`);
    add('statements (all) / status batches', `${count(c.statements)} (${c.statementDetail}) / ${count(c.statusBatches)}`);
    add('watch events received', `${count(a.events)}: ${a.eventDetail}; the server wrote ${count(c.serverEventsWritten)} in ${count(c.fillQueries)} tail-cache fills`);
    add('  per watcher per change', `${fmt(a.eventsPerWatcherPerChange, 6)} (expected ${count(a.watchers)} × ${count(a.changes)} = ${count(a.watchers * a.changes)})`);
    add('  bytes per event: mean; the PATCH answers as watch lines: mean, largest', `${fmt(a.meanEventBytes)} B; ${fmt(s.predictedLineBytesMean)} B, ${fmt(s.predictedLineBytesMax)} B`);
    add('re-lists (full lists, 410 resyncs)', `${count(a.relists)}: ${a.relistDetail}`);
    add('other watch requests (resumes)', count(a.resumes));
    add('status frames sent per agent', fmt(a.statusFrames / Math.max(1, a.watchers)));
    add('agent-side errors during the step', `${count(a.errors)}${a.errors > 0 ? `: ${a.errorDetail}` : ''}`);
  }
  return {
    title: `(g) churn: ${Math.round(CHURN_SHARE * 100)}% of the agents PATCH a new STUN endpoint at once (after the restart); ms from sending the PATCH that took the last revision`,
    columns: ['storage', 'N', 'figure', 'value'],
    rows,
  };
}

function setupCell(step: PolicySetupStep, n: number): string {
  const c = step.catchUp;
  const converged = Number.isNaN(c.convergedMs) ? `timeout: best at_head ${count(c.bestAtHead)} of ${count(n)}` : ms(c.convergedMs);
  return `head ${count(step.headBefore)} → ${count(step.headAfter)}; PUT → convergence at_head = N ${converged}`;
}

/** (h): the policy applies, median (min–max) over the timed ones. */
export function policyTable(runs: readonly FleetRunFigures[]): Table {
  const rows: Row[] = [];
  for (const r of runs) {
    const p = r.policy;
    if (!p) continue;
    const add = (figure: string, value: string): void => {
      rows.push([r.storage, count(r.n), figure, value]);
    };
    const over = (pick: (a: PolicyApply) => number, f?: (n: number) => string): string => overChanges(p.applies.map(pick), f);
    const first = p.applies[0];
    add('document', `${POLICY_GROUPS} groups × ${POLICY_RULES_PER_GROUP} rules, each group applies_to one tag (N ÷ ${POLICY_GROUPS} = ${fmt(r.n / POLICY_GROUPS)} devices per tag); YAML ${fmtBytes(p.documentBytes)}; ACKs by ${p.ack}`);
    add('setup: the generated document PUT back (adoption, group objects tombstoned)', setupCell(p.adopt, r.n));
    add("setup: the bench's document, ports shifted by 0", setupCell(p.first, r.n));
    add('timed applies (ports shifted by 1, 2, …: every rule changes)', count(p.applies.length));
    add('PUT round trip (parse, tests, compile, write)', over((a) => a.writeMs, ms));
    add('  groups changed per apply / revisions per apply', `${over((a) => a.groupsChanged, count)} / ${over((a) => a.revisionsTaken, count)}`);
    add('→ all N received (p50)', `${over((a) => a.catchUp.receivedMs, ms)} (${over((a) => a.catchUp.receivedP50Ms, ms)})`);
    add('  agents missing it (worst apply)', count(Math.max(...p.applies.map((a) => a.catchUp.missingReceived))));
    add('→ all N ACKed (frame sent)', over((a) => a.catchUp.ackedMs, ms));
    add('→ convergence at_head = N', over((a) => a.catchUp.convergedMs, ms));
    add('  best at_head seen', over((a) => a.catchUp.bestAtHead, count));
    add('  each apply in order: PUT round trip → convergence', p.applies.map((a) => `${ms(a.writeMs)} → ${ms(a.catchUp.convergedMs)}`).join('; '));
    add('server CPU per apply', over((a) => a.cpuSeconds, seconds));
    add(r.storage === 'postgresql' ? '  PostgreSQL CPU per apply' : '  of which its embedded PostgreSQL', over((a) => a.databaseCpuSeconds, seconds));
    add("  the bench's /metrics scrape, not counted above", over((a) => a.scrapeCpuSeconds, seconds));
    add('statements per apply (all); by label, apply 1', `${over((a) => a.statements)}; ${first?.statementDetail ?? '–'}`);
    add('watch events received per apply; the server wrote', `${over((a) => a.accounting.events)}; ${over((a) => a.serverEventsWritten)} in ${over((a) => a.fillQueries)} tail-cache fills`);
    add('  by type and kind, apply 1', first?.accounting.eventDetail ?? '–');
    add('  per watcher per apply', over((a) => a.accounting.eventsPerWatcherPerChange, (x) => fmt(x, 6)));
    add('  bytes per event (mean)', over((a) => a.accounting.meanEventBytes, fmtBytes));
    add('re-lists (full lists, 410 resyncs), all applies', `${count(p.applies.reduce((t, a) => t + a.accounting.relists, 0))}${first ? `; apply 1: ${first.accounting.relistDetail}` : ''}`);
    add('other watch requests (resumes), all applies', count(p.applies.reduce((t, a) => t + a.accounting.resumes, 0)));
    add('status frames sent per agent per apply', over((a) => a.accounting.statusFrames / Math.max(1, a.accounting.watchers)));
    const errors = p.applies.reduce((t, a) => t + a.accounting.errors, 0);
    add('agent-side errors, all applies', `${count(errors)}${errors > 0 ? `: ${p.applies.map((a) => a.accounting.errorDetail).filter((x) => x !== '').join('; ')}` : ''}`);
  }
  return {
    title: `(h) policy apply: PUT .../policy of a document changing every rule (after (g)); median (min–max) over the timed applies; ms from sending the PUT`,
    columns: ['storage', 'N', 'figure', 'value'],
    rows,
  };
}

/** (a): every join, fleetplane next to the raw floor. */
export function joinTable(runs: readonly FleetRunFigures[]): Table {
  const rows: Row[] = [];
  for (const r of runs) {
    for (const mode of ['paced', 'all at once'] as const) {
      const fleet = r.joins.find((j) => j.server === 'fleetplane' && j.mode === mode);
      const raw = r.joins.find((j) => j.server === 'raw floor' && j.mode === mode);
      if (!fleet && !raw) continue;
      const listed = (all: number, listedN: number): string => (Number.isNaN(all) ? `timeout (${count(listedN)} of ${count(r.n)})` : ms(all));
      rows.push([
        r.storage,
        count(r.n),
        mode === 'paced' ? 'paced, 64 at a time' : 'all at once',
        fleet ? listed(fleet.allListedMs, fleet.listed) : '–',
        raw ? listed(raw.allListedMs, raw.listed) : '–',
        fleet && raw ? fmt(fleet.allListedMs / raw.allListedMs) : '–',
        `${fleet ? ms(fleet.p50Ms) : '–'} / ${raw ? ms(raw.p50Ms) : '–'}`,
        fleet ? `${count(fleet.errors)}${fleet.errors > 0 ? `: ${fleet.errorDetail}` : ''}` : '–',
        raw ? count(raw.errors) : '–',
        fleet ? fmtBytes(fleet.bodyBytesPerAgent) : '–',
        fleet ? count(fleet.tunnelsOpen) : '–',
      ]);
    }
  }
  return {
    title: '(a) join: N fresh agents list device, security-group and organization to their tails; ms from the first agent\'s start',
    columns: ['storage', 'N', 'mode', 'fleetplane', 'raw floor', 'ratio', 'p50 fp / raw', 'errors (fp)', 'errors (raw)', 'list/agent', 'tunnels open'],
    rows,
  };
}

function catchUp(a: AckCatchUp | undefined, n: number): string {
  if (!a) return 'not measured';
  if (Number.isNaN(a.ms)) return `timeout: ${count(a.acked)} of ${count(n)} ACKed`;
  return a.already ? '0 ms (every agent had ACKed before)' : ms(a.ms);
}

function online(w: OnlineWait | undefined): string {
  if (!w) return 'not measured';
  if (!Number.isNaN(w.ms)) return ms(w.ms);
  if (Number.isNaN(w.online)) return 'FAIL: the convergence answer has no online count (server side not there yet?)';
  return `FAIL: timeout: online ${count(w.online)} of ${count(w.of)} after 10 s`;
}

/** Everything else per run: seeding, list size, ACK catch-ups, restart detail, idle detail. */
export function detailTable(runs: readonly FleetRunFigures[]): Table {
  const rows: Row[] = [];
  for (const r of runs) {
    const add = (figure: string, value: string): void => {
      rows.push([r.storage, count(r.n), figure, value]);
    };
    add('server', `${r.server ?? '–'}${r.serverWorkers > 1 ? ` (${r.serverWorkers} workers)` : ''}`);
    add('seeding (POST /devices, 16 in flight)', r.seedSeconds === undefined ? '–' : seconds(r.seedSeconds));
    add('initial list per agent', r.listBytesPerAgent === undefined ? '–' : `${fmtBytes(r.listBytesPerAgent)}, ${count(r.listLines ?? Number.NaN)} lines`);
    add('write alone (no agents): statements', r.baseline ? `${fmt(r.baseline.perWriteTotal)} per PATCH; convergence GET ${fmt(r.baseline.perPoll)}` : '–');
    add(`after the join: all ACKed (${r.joinAck?.ack === 'put' ? 'PUT' : 'tunnel'})`, catchUp(r.joinAck, r.n));
    add('after the join: convergence online = N', online(r.onlineAfterJoin));
    if (r.rpc) {
      const x = r.rpc;
      add('ping request through agent tunnels (rpc)', `${x.answered} of ${x.asked} answered with the head revision${x.answered > 0 ? `, median ${ms(x.medianMs)}` : ''}${x.failure ? `; FAIL: ${x.failure}` : ''}`);
    }
    if (r.ackSwitch) add(`after switching to ${r.ackSwitch.ack === 'put' ? 'PUT' : 'tunnel frames'}: all ACKed`, catchUp(r.ackSwitch, r.n));
    if (r.idle) {
      add('(d) idle statements by label', `${r.idle.statementDetail} (over ${fmt(r.idle.seconds)} s)`);
      add('(d) idle server CPU', `${fmt(r.idle.serverCores)} cores${r.storage === 'postgresql' ? `; PostgreSQL ${fmt(r.idle.databaseCores)} cores` : `, of which its embedded PostgreSQL ${fmt(r.idle.databaseCores)}`}`);
      add('(d) idle: agents connected / reports sent / errors', `${count(r.idle.agentsConnected)} / ${count(r.idle.agentReports)} / ${count(r.idle.errors)}${r.idle.errors > 0 ? `: ${r.idle.errorDetail}` : ''}`);
    }
    if (r.restart) {
      const x = r.restart;
      add('(b) restart: SIGTERM → listening', ms(x.downMs));
      add('(b) restart: listening → all watches resumed (p50)', `${Number.isNaN(x.resumedMs) ? `timeout: ${count(x.missingResumed)} not back` : ms(x.resumedMs)} (${ms(x.resumedP50Ms)})`);
      add('(b) restart: listening → all tunnels open', Number.isNaN(x.tunnelsMs) ? `timeout: ${count(x.missingTunnels)} not back` : ms(x.tunnelsMs));
      add('(b) restart: error responses', `${count(x.errorResponses)}${x.errorResponses > 0 ? `: ${x.errorResponseDetail}` : ''}; Retry-After waits ${count(x.retryAfterWaits)}`);
      add('(b) restart: refused/reset (server down)', `${count(x.connectionFailures)}${x.connectionFailures > 0 ? `: ${x.connectionFailureDetail}` : ''}`);
      add('(b) restart: all resumed → convergence online = N', online(r.onlineAfterRestart));
      add('(b) restart: stream error events', `${count(x.streamErrorEvents)}${x.streamErrorEvents > 0 ? `: ${x.streamErrorDetail}` : ''}`);
    }
    if (r.convergence) add('convergence', r.convergence);
    if (r.error) add('FAILED', r.error);
  }
  return { title: 'fleet: details per run', columns: ['storage', 'N', 'figure', 'value'], rows };
}
