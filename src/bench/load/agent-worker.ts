/**
 * A simulated-agent worker process (forked by load/agent-pool.ts): holds up
 * to a few thousand SimAgents (2 sockets each) and answers the harness's
 * RPC (load/agent-messages.ts). It exits, resetting every socket, when its
 * parent goes away.
 */
import { nowMs } from '../clock.js';
import { COUNTER, type AgentCounters } from './agent-counters.js';
import type {
  AgentGauges,
  AgentMethod,
  AgentReply,
  AgentRequest,
  AgentTarget,
  AgentWorkerApi,
  AwaitArgs,
  AwaitResult,
  JoinArgs,
  JoinResult,
  PatchArgs,
  PatchOutcome,
  ProgressField,
  SetupArgs,
  StuckReport,
} from './agent-messages.js';
import { SOCKETS_PER_AGENT } from './agent-messages.js';
import { WatchEventTally } from './event-tally.js';
import { MAX_SOCKETS_PER_WORKER } from './messages.js';
import { SimAgent, type AgentHost } from './sim-agent.js';
import { StatusPutSender } from './status-put.js';

interface Waiter {
  field: ProgressField;
  atLeast: number;
  count: number;
  total: number;
  done(): void;
}

const agents: SimAgent[] = [];
const counters: AgentCounters = {};
const waiters = new Set<Waiter>();
/** Agents of a join in progress, by index: resolved when the agent's watch reaches its tails. */
const joining = new Map<number, () => void>();
let putConnections = 16;
let putAddress = '127.0.0.1';
let putSender: StatusPutSender | undefined;

const host: AgentHost = {
  counters,
  putSender: () => putSender,
  progress(agent, field, before, after) {
    if (field === 'ready') joining.get(agent.index)?.();
    for (const w of waiters) {
      if (w.field !== field || !agent.running || before >= w.atLeast || after < w.atLeast) continue;
      if (++w.count >= w.total) w.done();
    }
  },
};

/** Runs `task(i)` for i < count with at most `limit` in flight. */
async function bounded(count: number, limit: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const run = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= count) return;
      await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, count)) }, run));
}

function setup(args: SetupArgs): { agents: number } {
  if (agents.length > 0) throw new Error('setup twice');
  if (args.agents.length * SOCKETS_PER_AGENT + args.putConnections > MAX_SOCKETS_PER_WORKER) {
    throw new Error(`${args.agents.length} agents need ${args.agents.length * SOCKETS_PER_AGENT} sockets; a worker holds at most ${MAX_SOCKETS_PER_WORKER} (ulimit -n)`);
  }
  args.agents.forEach((identity, i) => {
    const address = args.localAddresses[Math.floor(i / args.agentsPerAddress) % args.localAddresses.length] ?? '127.0.0.1';
    agents.push(new SimAgent(i, identity, address, host));
  });
  putConnections = args.putConnections;
  putAddress = args.localAddresses[0] ?? '127.0.0.1';
  return { agents: agents.length };
}

function stopAll(): { stopped: number } {
  let stopped = 0;
  for (const a of agents) {
    if (a.running) stopped++;
    a.stop();
  }
  putSender?.close();
  putSender = undefined;
  for (const resolve of joining.values()) resolve();
  joining.clear();
  return { stopped };
}

function usePutTarget(target: AgentTarget): void {
  putSender?.close();
  putSender = new StatusPutSender(target.host, target.port, putConnections, putAddress, counters);
}

async function join(args: JoinArgs): Promise<JoinResult> {
  stopAll();
  usePutTarget(args.target);
  const startedAt = nowMs();
  const deadline = startedAt + args.timeoutMs;
  const readyAt = new Float64Array(agents.length).fill(Number.NaN);
  await bounded(agents.length, args.concurrency, async (i) => {
    const agent = agents[i];
    const left = deadline - nowMs();
    if (!agent || left <= 0) return;
    const ready = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, left);
      joining.set(i, () => {
        clearTimeout(timer);
        resolve();
      });
    });
    agent.start(args.target);
    await ready;
    joining.delete(i);
    if (agent.readyAt > Number.NEGATIVE_INFINITY) readyAt[i] = agent.readyAt;
  });
  return { startedAt, readyAt };
}

function setAck(mode: AgentTarget['ack']): { agents: number } {
  for (const a of agents) if (a.running) a.setAck(mode);
  return { agents: agents.length };
}

async function patch(args: PatchArgs): Promise<{ outcomes: PatchOutcome[] }> {
  const outcomes = await Promise.all(
    args.patches.map((p) => {
      const agent = agents[p.agent];
      if (!agent?.running) {
        return { agent: p.agent, status: 0, revision: Number.NaN, lineBytes: Number.NaN, sentAt: Number.NaN, doneAt: Number.NaN, error: 'no such running agent' };
      }
      return agent.patchOwnDevice(p.body);
    }),
  );
  return { outcomes };
}

function awaitField(args: AwaitArgs): Promise<AwaitResult> {
  const running = agents.filter((a) => a.running);
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const waiter: Waiter = {
      field: args.field,
      atLeast: args.atLeast,
      count: running.filter((a) => a.value(args.field) >= args.atLeast).length,
      total: running.length,
      done: () => {
        clearTimeout(timer);
        waiters.delete(waiter);
        const times = new Float64Array(agents.length).fill(Number.NaN);
        for (const a of agents) if (a.running && a.value(args.field) >= args.atLeast) times[a.index] = a.timeOf(args.field);
        resolve({ times, running: running.length });
      },
    };
    if (waiter.count >= waiter.total) return waiter.done();
    waiters.add(waiter);
    timer = setTimeout(waiter.done, args.timeoutMs);
  });
}

function getCounters(): { counters: AgentCounters; gauges: AgentGauges } {
  const gauges: AgentGauges = { agents: agents.length, running: 0, watchesOpen: 0, watchesReady: 0, tunnelsOpen: 0 };
  let lines = 0;
  let bodyBytes = 0;
  const tally = new WatchEventTally();
  for (const a of agents) {
    lines += a.watchLines;
    bodyBytes += a.watchBodyBytes;
    a.addEventsTo(tally);
    if (a.running) gauges.running++;
    if (a.watchOpen) gauges.watchesOpen++;
    if (a.watchReady) gauges.watchesReady++;
    if (a.tunnelOpen) gauges.tunnelsOpen++;
  }
  return { counters: tally.addTo({ ...counters, [COUNTER.lines]: lines, [COUNTER.bodyBytes]: bodyBytes }), gauges };
}

/** Running agents not at their tails, by where their watch is; the first `examples` in detail. */
function stuck(args: { examples: number }): StuckReport {
  const now = nowMs();
  const report: StuckReport = { byState: {}, examples: [] };
  for (const a of agents) {
    // Undefined for a stopped agent.
    const d = a.diagnose(now);
    if (!d || d.ready) continue;
    const key = `${d.state}${d.retryArmed ? ', retry armed' : ''}${d.socketHeld ? ', socket held' : ''}`;
    report.byState[key] = (report.byState[key] ?? 0) + 1;
    if (report.examples.length < args.examples) report.examples.push(d);
  }
  return report;
}

const handlers: { [M in AgentMethod]: (args: AgentWorkerApi[M]['args']) => Promise<AgentWorkerApi[M]['result']> | AgentWorkerApi[M]['result'] } = {
  setup,
  join,
  stopAll,
  setAck: (args) => setAck(args.mode),
  patch,
  await: awaitField,
  counters: getCounters,
  stuck,
  clock: () => ({ now: nowMs() }),
};

function isRequest(m: unknown): m is AgentRequest {
  return typeof m === 'object' && m !== null && 'id' in m && 'method' in m && typeof m.method === 'string' && m.method in handlers;
}

async function dispatch<M extends AgentMethod>(req: AgentRequest<M>): Promise<AgentWorkerApi[M]['result']> {
  const handler = handlers[req.method] as (args: AgentWorkerApi[M]['args']) => Promise<AgentWorkerApi[M]['result']> | AgentWorkerApi[M]['result'];
  return handler(req.args);
}

function reply(msg: AgentReply): void {
  process.send?.(msg);
}

process.on('message', (m: unknown) => {
  if (!isRequest(m)) {
    process.stderr.write(`bench agent worker: ignoring a message that is not a request: ${JSON.stringify(m).slice(0, 200)}\n`);
    return;
  }
  dispatch(m).then(
    (result) => reply({ id: m.id, ok: true, result }),
    (err: unknown) => reply({ id: m.id, ok: false, error: err instanceof Error ? err.message : String(err) }),
  );
});

// The harness owns this process: when the IPC channel closes, leave, resetting every socket.
process.on('disconnect', () => {
  stopAll();
  process.exit(0);
});
