import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { track } from '../children.js';
import { cpuSecondsOf } from '../proc-stats.js';
import { CPU_PROFILE_ENV } from '../server/fleet-server.js';
import type { DevicePatch } from '../../protocol/index.js';
import { addCounters, type AgentCounters } from './agent-counters.js';
import {
  SOCKETS_PER_AGENT,
  type AckMode,
  type AgentGauges,
  type AgentIdentity,
  type AgentTarget,
  type AgentWorkerApi,
  type PatchOutcome,
  type ProgressField,
  type StuckReport,
} from './agent-messages.js';
import { allocateAddresses, SOCKETS_PER_ADDRESS } from './loopback.js';
import { MAX_SOCKETS_PER_WORKER } from './messages.js';
import { RpcChild } from './rpc-child.js';

const WORKER = fileURLToPath(new URL('./agent-worker.js', import.meta.url));

/**
 * Keep-alive sockets of each worker's PUT pool (ACKs by PUT). A PUT is
 * answered once its status batch committed (up to 100 ms later by default), so a
 * socket carries about 4 a second: 32 could not carry 10,000 ACKs within a
 * change's wait. The servers' open-files budget counts them (fleet-plan).
 */
export const PUT_CONNECTIONS_PER_WORKER = 512;

interface Worker {
  rpc: RpcChild<AgentWorkerApi>;
  agents: number;
  /** Index of its first agent in the pool (the identities' order). */
  first: number;
}

/** Worker processes for `agents` simulated agents at `socketsPerWorker` sockets each (2 per agent). */
export function agentWorkersFor(agents: number, socketsPerWorker: number): number {
  return Math.max(1, Math.ceil((agents * SOCKETS_PER_AGENT) / Math.max(SOCKETS_PER_AGENT, socketsPerWorker - PUT_CONNECTIONS_PER_WORKER)));
}

/**
 * The harness side of the simulated fleet: W forked worker processes, each
 * holding its share of the agents (a watch stream and a tunnel each, on its
 * own loopback source addresses). Results come back on the harness's clock.
 */
export class AgentPool {
  /** Largest clock uncertainty (half the fastest IPC round trip) over the workers, ms. */
  clockUncertaintyMs = 0;

  private constructor(private readonly workers: Worker[]) {}

  static async start(identities: readonly AgentIdentity[], socketsPerWorker: number): Promise<AgentPool> {
    const count = agentWorkersFor(identities.length, socketsPerWorker);
    const workers: Worker[] = [];
    let at = 0;
    for (let i = 0; i < count; i++) {
      const n = Math.floor(identities.length / count) + (i < identities.length % count ? 1 : 0);
      if (n * SOCKETS_PER_AGENT + PUT_CONNECTIONS_PER_WORKER > MAX_SOCKETS_PER_WORKER) throw new Error(`${n} agents exceed one worker's socket budget`);
      // Profiled with the servers when asked (bench/README.md "Profiling"): the simulated fleet shares their cores.
      const profDir = process.env[CPU_PROFILE_ENV];
      const profile = profDir ? ['--cpu-prof', '--cpu-prof-dir', profDir] : [];
      const child = fork(WORKER, [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: ['--max-old-space-size=4096', ...profile] });
      track(child);
      workers.push({ rpc: new RpcChild<AgentWorkerApi>(child), agents: n, first: at });
      const mine = identities.slice(at, at + n);
      at += n;
      const perAddress = Math.floor(SOCKETS_PER_ADDRESS / SOCKETS_PER_AGENT);
      const w = workers[workers.length - 1];
      await w?.rpc.call('setup', { agents: mine, localAddresses: allocateAddresses(n, perAddress), agentsPerAddress: perAddress, putConnections: PUT_CONNECTIONS_PER_WORKER });
    }
    const pool = new AgentPool(workers);
    for (const w of workers) pool.clockUncertaintyMs = Math.max(pool.clockUncertaintyMs, await w.rpc.calibrate());
    return pool;
  }

  get size(): number {
    return this.workers.length;
  }

  /** CPU seconds the worker processes have used so far (user + system): what the simulated fleet took of the machine. */
  cpuSeconds(): number {
    let total = 0;
    for (const w of this.workers) {
      const pid = w.rpc.child.pid;
      total += pid === undefined ? 0 : (cpuSecondsOf(pid) ?? 0);
    }
    return total;
  }

  get agents(): number {
    return this.workers.reduce((n, w) => n + w.agents, 0);
  }

  /**
   * Starts every agent afresh against `target`, at most `concurrency` joining
   * at once over the whole pool (split over the workers). Resolves when all
   * are at their tails or at the timeout; agents not there yet keep trying.
   */
  async join(target: AgentTarget, concurrency: number, timeoutMs: number): Promise<{ startedAt: number; readyAt: Float64Array }> {
    const total = this.agents;
    const parts = await Promise.all(
      this.workers.map((w) => {
        const share = Math.max(1, Math.round((concurrency * w.agents) / Math.max(1, total)));
        return w.rpc.call('join', { target, concurrency: share, timeoutMs }).then((r) => ({ r, w }));
      }),
    );
    return {
      startedAt: Math.min(...parts.map(({ r, w }) => r.startedAt - w.rpc.offset)),
      readyAt: concat(parts.map(({ r, w }) => ({ times: r.readyAt, offset: w.rpc.offset }))),
    };
  }

  /** Resets every agent's connections (TCP RST); they stay stopped until the next join. */
  async stopAll(): Promise<number> {
    const r = await Promise.all(this.workers.map((w) => w.rpc.call('stopAll', {})));
    return r.reduce((n, x) => n + x.stopped, 0);
  }

  async setAck(mode: AckMode): Promise<void> {
    await Promise.all(this.workers.map((w) => w.rpc.call('setAck', { mode })));
  }

  /**
   * Each listed agent (`agent`: its index in the identities the pool was
   * started with) PATCHes its own device with its token, every worker at
   * once; outcomes in the order asked, `agent` as given, times on the
   * harness's clock.
   */
  async patchOwnDevices(org: string, patches: readonly { agent: number; body: DevicePatch }[]): Promise<PatchOutcome[]> {
    const parts = await Promise.all(
      this.workers.map(async (w) => {
        const mine = patches.filter((p) => p.agent >= w.first && p.agent < w.first + w.agents);
        if (mine.length === 0) return [];
        const r = await w.rpc.call('patch', { org, patches: mine.map((p) => ({ agent: p.agent - w.first, body: p.body })) });
        return r.outcomes.map((o) => ({ ...o, agent: o.agent + w.first, sentAt: o.sentAt - w.rpc.offset, doneAt: o.doneAt - w.rpc.offset }));
      }),
    );
    const byAgent = new Map(parts.flat().map((o) => [o.agent, o]));
    return patches.map((p) => byAgent.get(p.agent) ?? { agent: p.agent, status: 0, revision: Number.NaN, lineBytes: Number.NaN, sentAt: Number.NaN, doneAt: Number.NaN, error: 'no worker holds this agent' });
  }

  /**
   * Waits until every running agent's `field` is ≥ `atLeast` (or the
   * timeout); per agent, when its value last rose (NaN: not there). For the
   * time fields (`ready`, `tunnel`), `atLeast` is a harness time.
   */
  async awaitField(field: ProgressField, atLeast: number, timeoutMs: number): Promise<Float64Array> {
    const isTime = field === 'ready' || field === 'tunnel';
    const parts = await Promise.all(
      this.workers.map((w) =>
        w.rpc.call('await', { field, atLeast: isTime ? atLeast + w.rpc.offset : atLeast, timeoutMs }).then((r) => ({ times: r.times, offset: w.rpc.offset })),
      ),
    );
    return concat(parts);
  }

  async counters(): Promise<{ counters: AgentCounters; gauges: AgentGauges }> {
    const all = await Promise.all(this.workers.map((w) => w.rpc.call('counters', {})));
    const counters: AgentCounters = {};
    const gauges: AgentGauges = { agents: 0, running: 0, watchesOpen: 0, watchesReady: 0, tunnelsOpen: 0 };
    for (const c of all) {
      addCounters(counters, c.counters);
      gauges.agents += c.gauges.agents;
      gauges.running += c.gauges.running;
      gauges.watchesOpen += c.gauges.watchesOpen;
      gauges.watchesReady += c.gauges.watchesReady;
      gauges.tunnelsOpen += c.gauges.tunnelsOpen;
    }
    return { counters, gauges };
  }

  /** Running agents whose watch isn't at its tails, over every worker; at most `examples` in detail. */
  async stuck(examples: number): Promise<StuckReport> {
    const all = await Promise.all(this.workers.map((w) => w.rpc.call('stuck', { examples })));
    const report: StuckReport = { byState: {}, examples: [] };
    for (const r of all) {
      for (const [k, v] of Object.entries(r.byState)) report.byState[k] = (report.byState[k] ?? 0) + v;
      report.examples.push(...r.examples.slice(0, examples - report.examples.length));
    }
    return report;
  }

  /** Ends the workers (they reset their sockets when the IPC channel closes). */
  async stop(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.rpc.stop()));
  }
}

/** Worker arrays, in worker order, on the harness clock. */
function concat(parts: readonly { times: Float64Array; offset: number }[]): Float64Array {
  const out = new Float64Array(parts.reduce((n, p) => n + p.times.length, 0));
  let at = 0;
  for (const p of parts) {
    for (let i = 0; i < p.times.length; i++) out[at + i] = (p.times[i] ?? Number.NaN) - p.offset;
    at += p.times.length;
  }
  return out;
}
