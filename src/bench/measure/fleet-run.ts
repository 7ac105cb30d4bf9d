import { nowMs } from '../clock.js';
import type { FleetApi } from '../http-api.js';
import type { AgentTarget } from '../load/agent-messages.js';
import { AgentPool } from '../load/agent-pool.js';
import { log } from '../log.js';
import { RawFloorServer } from '../raw-floor/raw-floor-server.js';
import { BENCH_ADMIN_TOKEN } from '../server/fleet-server.js';
import type { BenchPostgres } from '../server/postgres.js';
import { RestartableServer, type StorageName } from '../server/restartable-server.js';
import { maxOf } from '../stats.js';
import { sleep } from '../../util/sleep.js';
import { ackTimeoutMs, changeLoop, SILENT_ACK_TIMEOUT_MS, type ChangeLoopResult } from './change-loop.js';
import { measureChurn, type ChurnFigures } from './churn-run.js';
import { ConvergenceFollower } from './convergence-follower.js';
import type { RunnablePlan } from './fleet-plan.js';
import { seedFleet } from './fleet-seed.js';
import { measureIdle, type IdleFigures } from './idle-run.js';
import { measureJoin, type JoinFigures, type JoinMode } from './join-run.js';
import { captureListBody } from './list-body.js';
import { memoryFigures, type MemoryFigures } from './raw-floor-run.js';
import { measureRestart, resumeTimeoutMs, type RestartFigures } from './restart-run.js';
import { pssFigures, serverRss, type PssFigures } from './server-rss.js';
import { treeMemory } from './tree-memory.js';
import { measureStatementBaseline, type StatementBaseline } from './statement-baseline.js';
import { awaitOnline, type OnlineWait } from './online-wait.js';
import { measurePolicy, type PolicyFigures } from './policy-run.js';
import { probeTunnels, type TunnelProbe } from './tunnel-probe.js';
import { endpointOf } from './watch-spec.js';

/** A wait for every agent to ACK the revision it already has (after the join, after switching to PUT). */
export interface AckCatchUp {
  ack: 'tunnel' | 'put';
  /** From the start of the wait; 0 when every agent had ACKed before it; NaN when some didn't in time. */
  ms: number;
  acked: number;
  of: number;
  /** Every ACK was confirmed before the wait began (nothing was left to send). */
  already: boolean;
}

/** Everything measured for one storage and one N; a phase that failed leaves its field out and says so in `error`. */
export interface FleetRunFigures {
  storage: StorageName;
  n: number;
  serverWorkers: number;
  server?: string;
  seedSeconds?: number;
  listBytesPerAgent?: number;
  listLines?: number;
  baseline?: StatementBaseline;
  joins: JoinFigures[];
  joinAck?: AckCatchUp;
  /** After the all-at-once join: convergence `online` reaching N. */
  onlineAfterJoin?: OnlineWait;
  /** `ping` requests through a few agents' tunnels. */
  rpc?: TunnelProbe;
  /** (e): with N agents connected, read after (d)'s idle window (steady state), then after a full GC. */
  memory?: MemoryFigures;
  /** (e) from PSS: the tree's memory with shared pages counted once. */
  memoryPss?: PssFigures;
  /** PSS per agent read just after the all-at-once join (no GC): what a herd leaves behind until the heaps settle. */
  pssPerAgentAfterJoin?: number;
  idle?: IdleFigures;
  convergence?: string;
  tunnel?: ChangeLoopResult;
  /** After switching to the second ACK mode. */
  ackSwitch?: AckCatchUp;
  put?: ChangeLoopResult;
  restart?: RestartFigures;
  /** After every agent resumed from the restart: convergence `online` reaching N. */
  onlineAfterRestart?: OnlineWait;
  /** (g), last: 10% of the agents move their STUN endpoint at once. */
  churn?: ChurnFigures;
  /** (h), after (g): policy documents that change every rule of the organization, applied as one revision each. */
  policy?: PolicyFigures;
  notes: string[];
  error?: string;
}

const LIST_TIMEOUT_MS = 120_000;
/** Presence is written in batches (≤ 100 ms apart by default): N online should show well within this. */
const ONLINE_TIMEOUT_MS = 10_000;
/** A join is bounded by the bytes it must move at this rate (the machine does far better), plus a minute. */
const JOIN_BOUND_BYTES_PER_SECOND = 40 * 1024 * 1024;

export function joinTimeoutMs(n: number, listBytes: number): number {
  return 60_000 + Math.ceil(((n * listBytes) / JOIN_BOUND_BYTES_PER_SECOND) * 1000);
}

/** Waits until every agent's ACK of `revision` is confirmed (bounded). */
async function ackCatchUp(pool: AgentPool, ack: AckCatchUp['ack'], revision: number, timeoutMs: number): Promise<AckCatchUp> {
  const t0 = nowMs();
  const times = await pool.awaitField('acked', revision, timeoutMs);
  const acked = times.filter((t) => !Number.isNaN(t)).length;
  const last = maxOf(times);
  return { ack, ms: acked === times.length ? Math.max(0, last - t0) : Number.NaN, acked, of: times.length, already: acked === times.length && last < t0 };
}

/**
 * One storage, one N, in this order: seed; statement baseline; capture the
 * list bytes; RSS before; joins (raw paced, fleetplane paced, raw all at
 * once, fleetplane all at once: agents stay); join ACKs, online count, ping
 * through a few tunnels; RSS with N; idle; a change loop per ACK mode
 * (tunnel, then PUT by default); restart, online count; endpoint churn
 * (ACKs by tunnel when that mode was asked for); policy applies (the
 * same ACKs; last, since a document then owns the security groups). Stops
 * at the first phase that throws, keeping what was measured.
 */
export async function fleetRun(o: {
  plan: RunnablePlan;
  pg: BenchPostgres | undefined;
  idleSeconds: number;
  /** ACK modes, in order: the join and the first change loop use the first. */
  acks: readonly ('tunnel' | 'put')[];
  socketsPerWorker: number;
  signal: AbortSignal;
}): Promise<FleetRunFigures> {
  const { storage, n } = o.plan;
  const fig: FleetRunFigures = { storage, n, serverWorkers: o.plan.serverWorkers, joins: [], notes: [] };
  const flags = o.plan.serverWorkers > 1 ? ['--workers', String(o.plan.serverWorkers)] : [];
  let server: RestartableServer | undefined;
  let api: FleetApi | undefined;
  let pool: AgentPool | undefined;
  let raw: RawFloorServer | undefined;
  let follower: ConvergenceFollower | undefined;
  try {
    server = await RestartableServer.start(storage, flags, o.pg, `fleet_${n}`);
    fig.server = server.commandLine;
    api = server.current.api(32);
    log.info({ storage, n }, 'seeding the fleet');
    const seed = await seedFleet(api, n, `fleet-${storage}-${n}`, o.signal);
    fig.seedSeconds = seed.seedSeconds;
    fig.baseline = await measureStatementBaseline(server, api, o.pg, seed.org, seed.groupId);
    const list = await captureListBody(server.url, seed.org, BENCH_ADMIN_TOKEN, LIST_TIMEOUT_MS);
    fig.listBytesPerAgent = list.bodyBytes;
    fig.listLines = list.lines;
    const head = await api.headRevision(seed.org);
    // The baseline settles as long as the loaded reading does ((d)'s idle window), with no forced GC before either:
    // V8 shrinks an idle heap by itself (its young generation from 32 MiB to 1), and a baseline taken at
    // the seeding's peak would make the agents look cheaper than they are.
    log.info({ seconds: o.idleSeconds }, 'settling before the memory baseline');
    await sleep(o.idleSeconds * 1000, o.signal);
    o.signal.throwIfAborted();
    const rssBefore = await serverRss(server, false, o.signal);

    const agents = await AgentPool.start(seed.identities, o.socketsPerWorker);
    pool = agents;
    raw = await RawFloorServer.start();
    await raw.setListBody(list.framed);
    const endpoint = endpointOf(server.url);
    const fleetTarget: AgentTarget = { host: endpoint.host, port: endpoint.port, org: seed.org, tunnel: true, bookmarks: true, ack: o.acks[0] ?? 'tunnel' };
    const rawTarget: AgentTarget = { host: '127.0.0.1', port: raw.port, org: seed.org, tunnel: false, bookmarks: false, ack: 'none' };
    const timeoutMs = joinTimeoutMs(n, list.bodyBytes);
    const join = async (target: AgentTarget, server: JoinFigures['server'], mode: JoinMode): Promise<void> => {
      const j = await measureJoin({ pool: agents, target, server, mode, timeoutMs });
      fig.joins.push(j);
      if (j.stuck !== undefined) fig.notes.push(`${server} join (${mode}): ${j.stuck}`);
    };
    for (const mode of ['paced', 'all at once'] as const) {
      await join(rawTarget, 'raw floor', mode);
      await agents.stopAll();
      await join(fleetTarget, 'fleetplane', mode);
      // The all-at-once fleet stays connected for what follows.
      if (mode === 'paced') {
        await agents.stopAll();
        await sleep(1000, o.signal);
        o.signal.throwIfAborted();
      }
    }
    await raw.stop();
    raw = undefined;

    fig.joinAck = await ackCatchUp(pool, fleetTarget.ack === 'put' ? 'put' : 'tunnel', head, ackTimeoutMs(n));
    fig.onlineAfterJoin = await awaitOnline(api, seed.org, n, ONLINE_TIMEOUT_MS);
    fig.rpc = await probeTunnels(api, seed.org, seed.identities, head);
    fig.pssPerAgentAfterJoin = (treeMemory(server.current.pid).pssBytes - rssBefore.pssBytes) / n;
    fig.idle = await measureIdle({ server, api, pg: o.pg, pool, seconds: o.idleSeconds, signal: o.signal });
    // Read after the idle window and before any forced GC: what N connected agents cost once the join's garbage is the heaps' own business.
    const rssAfter = await serverRss(server, false, o.signal);
    fig.memory = memoryFigures(n, rssBefore, rssAfter);
    fig.memoryPss = pssFigures(n, rssBefore, rssAfter);
    const backgroundWritesPerSecond = fig.idle.writeStatementsPerMinute / 60;

    follower = await ConvergenceFollower.start(api, server.url, seed.org, BENCH_ADMIN_TOKEN);
    fig.convergence = follower.how;
    const loop = { server, api, pg: o.pg, pool, follower, org: seed.org, groupId: seed.groupId, baseline: fig.baseline, backgroundWritesPerSecond, signal: o.signal };
    for (const [i, ack] of o.acks.entries()) {
      if (i > 0) {
        await pool.setAck(ack);
        fig.ackSwitch = await ackCatchUp(pool, ack, await api.headRevision(seed.org), ackTimeoutMs(n));
      }
      const before = i === 0 ? fig.joinAck : fig.ackSwitch;
      // A server that confirmed no ACK at all so far won't start now: don't wait the full time for each change.
      const silent = before !== undefined && before.acked === 0;
      if (silent) fig.notes.push(`no agent's ACK by ${ack} was confirmed within ${Math.round(ackTimeoutMs(n) / 1000)} s before the ${ack} change loop: it waits only ${SILENT_ACK_TIMEOUT_MS / 1000} s per change for ACKs and convergence.`);
      const result = await changeLoop({ ...loop, ack, ackTimeoutMs: silent ? SILENT_ACK_TIMEOUT_MS : ackTimeoutMs(n) });
      if (ack === 'tunnel') fig.tunnel = result;
      else fig.put = result;
    }
    follower.stop();
    follower = undefined;

    fig.restart = await measureRestart(server, agents, resumeTimeoutMs(n));
    if (fig.restart.stuck !== undefined) fig.notes.push(`restart: ${fig.restart.stuck}`);
    fig.onlineAfterRestart = await awaitOnline(api, seed.org, n, ONLINE_TIMEOUT_MS);

    // The convergence target is (c)'s, whose ACKs go by tunnel frame: so do the churn's, when that mode was asked for.
    const churnAck = o.acks.includes('tunnel') ? 'tunnel' : (o.acks[0] ?? 'tunnel');
    if (churnAck !== o.acks[o.acks.length - 1]) await pool.setAck(churnAck);
    follower = await ConvergenceFollower.start(api, server.url, seed.org, BENCH_ADMIN_TOKEN);
    fig.churn = await measureChurn({ server, api, pg: o.pg, pool, follower, org: seed.org, ack: churnAck, ackTimeoutMs: ackTimeoutMs(n), signal: o.signal });
    if (fig.churn.first.stuck !== undefined) fig.notes.push(`churn, first endpoints: ${fig.churn.first.stuck}`);
    if (fig.churn.step.stuck !== undefined) fig.notes.push(`churn: ${fig.churn.step.stuck}`);
    fig.policy = await measurePolicy({ server, api, pg: o.pg, pool, follower, org: seed.org, ack: churnAck, ackTimeoutMs: ackTimeoutMs(n), signal: o.signal });
    for (const [what, step] of [['adoption', fig.policy.adopt], ['first document', fig.policy.first]] as const) {
      if (step.catchUp.stuck !== undefined) fig.notes.push(`policy, ${what}: ${step.catchUp.stuck}`);
    }
    for (const a of fig.policy.applies) if (a.catchUp.stuck !== undefined) fig.notes.push(`policy apply ${a.shift}: ${a.catchUp.stuck}`);
    follower.stop();
    follower = undefined;
  } catch (err) {
    fig.error = err instanceof Error ? err.message : String(err);
    log.error({ err, storage, n }, 'fleet run failed');
    if (server) fig.notes.push(`server stderr (last lines): ${server.current.recentStderr.trim().split('\n').slice(-3).join(' | ')}`);
  } finally {
    follower?.stop();
    await raw?.stop();
    await pool?.stop();
    api?.close();
    await server?.stop();
  }
  return fig;
}
