import type { Scenario, ScenarioResult, TargetResult } from '../scenario.js';
import { log } from '../log.js';
import { hasPostgres, PG_SERVER_SETTINGS, startPostgres } from '../server/postgres.js';
import { openFilesLimit } from '../server/open-files-limit.js';
import { ackTimeoutMs, CHANGES } from '../measure/change-loop.js';
import { RECEIVE_TIMEOUT_MS } from '../measure/fleet-catch-up.js';
import { CHURN_EVENT_BYTES_LIMIT, CHURN_SHARE } from '../measure/churn-accounting.js';
import { fleetMethod } from '../measure/fleet-method.js';
import { fleetOptions, FLEET_FLAGS } from '../measure/fleet-options.js';
import { planFleet, type FleetPlan, type RunnablePlan } from '../measure/fleet-plan.js';
import { fleetRun, joinTimeoutMs, type FleetRunFigures } from '../measure/fleet-run.js';
import { changeTable, churnTable, detailTable, joinTable, policyTable } from '../measure/fleet-tables.js';
import { FLEET_TARGETS, notRunRow, runTargets, TARGET_COLUMNS } from '../measure/fleet-targets.js';
import { PACED_CONCURRENCY } from '../measure/join-run.js';
import { POLICY_GROUPS, POLICY_RULES_PER_GROUP } from '../measure/policy-document.js';
import { resumeTimeoutMs } from '../measure/restart-run.js';

/** A list is about this many bytes per device (for time bounds only; the real size is measured). */
const LIST_BYTES_PER_DEVICE_GUESS = 600;

/** Upper bound of one (storage, N) run: every wait at its timeout. */
function runBoundMs(n: number, idleSeconds: number): number {
  const join = joinTimeoutMs(n, n * LIST_BYTES_PER_DEVICE_GUESS);
  const changes = 2 * CHANGES * (30_000 + ackTimeoutMs(n) + 1_000);
  // Two rounds of endpoint PATCHes (the first publication, then the step), each waiting like one change.
  const churn = 2 * (RECEIVE_TIMEOUT_MS + ackTimeoutMs(n) + 30_000) + 10_000;
  // The policy's two setup PUTs and its timed applies, each waiting like one change.
  const policy = (2 + CHANGES) * (RECEIVE_TIMEOUT_MS + ackTimeoutMs(n) + 30_000) + 10_000;
  return 120_000 + 20 * n + 4 * join + 2 * ackTimeoutMs(n) + changes + idleSeconds * 1000 + resumeTimeoutMs(n) + 60_000 + churn + policy;
}

/**
 * `fleet`: N simulated agents, each with its own device, watch stream,
 * tunnel and ACKs, against one server per storage: join (vs the raw floor),
 * restart, change → received → ACKed → converged (ACKs by tunnel and by
 * PUT), idle writes, RSS per agent, 10% of the agents moving their
 * endpoint at once, and last policy documents changing every rule. See
 * bench/README.md.
 */
export const fleet: Scenario = {
  name: 'fleet',
  summary: 'N agents (watch + tunnel + ACKs): join vs raw floor, restart, change → ACK → convergence (tunnel vs PUT), idle writes, RSS/agent, endpoint churn, policy apply',
  inDefault: false,
  flags: FLEET_FLAGS,
  timeLimitMs: (o) => {
    const f = fleetOptions(o.flags);
    return f.storages.length * f.agents.reduce((t, n) => t + runBoundMs(n, f.idleSeconds), 0);
  },
  async run({ opts, signal }): Promise<ScenarioResult> {
    const f = fleetOptions(opts.flags);
    const openFiles = openFilesLimit();
    const notes: string[] = [...fleetMethod(f.idleSeconds)];
    const plans: RunnablePlan[] = f.storages.flatMap((s) => f.agents.map((n) => planFleet(s, n, openFiles, opts.socketsPerWorker)));
    const notRun: FleetPlan[] = [];
    const runs: FleetRunFigures[] = [];
    for (const storage of f.storages) {
      const mine = plans.filter((p) => p.storage === storage);
      if (mine.length === 0) continue;
      if (storage === 'postgresql' && !hasPostgres()) {
        for (const p of mine) notRun.push({ storage, n: p.n, runnable: false, serverSockets: p.serverSockets, reason: 'not run: PostgreSQL is not installed (/usr/lib/postgresql/15/bin)' });
        continue;
      }
      const pg = storage === 'postgresql' ? await startPostgres() : undefined;
      try {
        for (const plan of mine) {
          log.info({ scenario: 'fleet', storage, agents: plan.n, serverWorkers: plan.serverWorkers }, 'run');
          runs.push(await fleetRun({ plan, pg, idleSeconds: f.idleSeconds, acks: f.acks, socketsPerWorker: opts.socketsPerWorker, signal }));
        }
      } finally {
        pg?.stop();
      }
    }
    const targetRows: string[][] = [];
    const targets: TargetResult[] = [];
    for (const r of runs) {
      const t = runTargets(r);
      targetRows.push(...t.rows);
      targets.push(...t.targets);
    }
    targetRows.push(...notRun.map(notRunRow));
    for (const r of runs) {
      for (const n of [...r.notes, ...(r.tunnel?.notes ?? []), ...(r.put?.notes ?? [])]) notes.push(`${r.storage}, ${r.n.toLocaleString('en-US')} agents: ${n}`);
      if (r.error) notes.push(`${r.storage}, ${r.n.toLocaleString('en-US')} agents: FAILED: ${r.error}`);
    }
    for (const p of notRun) notes.push(`${p.storage}, ${p.n.toLocaleString('en-US')} agents: ${p.reason}`);
    return {
      settings: {
        agents: f.agents,
        storages: f.storages,
        idleSeconds: f.idleSeconds,
        ackModes: f.acks,
        changesPerLoop: CHANGES,
        churn: { share: CHURN_SHARE, eventBytesLimit: CHURN_EVENT_BYTES_LIMIT },
        policy: { groups: POLICY_GROUPS, rulesPerGroup: POLICY_RULES_PER_GROUP, timedApplies: CHANGES },
        pacedConcurrency: PACED_CONCURRENCY,
        openFilesPerProcess: openFiles,
        plans,
        servers: Object.fromEntries(runs.map((r) => [`${r.storage}/${r.n}`, r.server])),
        postgresSettings: f.storages.includes('postgresql') && hasPostgres() ? PG_SERVER_SETTINGS : undefined,
        targets: FLEET_TARGETS,
        runs: 'one pass per storage and N (--runs is not used: a 10,000-agent join moves about 45 GB); figures of (c)/(f) are over 5 changes',
      },
      tables: [{ title: 'fleet: targets (stated for 10,000 agents)', columns: TARGET_COLUMNS, rows: targetRows }, joinTable(runs), changeTable(runs), churnTable(runs), policyTable(runs), detailTable(runs)].filter(
        (t) => t.rows.length > 0,
      ),
      runs,
      summary: Object.fromEntries(runs.map((r) => [`${r.storage}/${r.n}`, { targets: runTargets(r).targets }])),
      targets,
      notes,
    };
  },
};
