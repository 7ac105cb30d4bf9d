/**
 * A load-generator process (forked by load/pool.ts): holds watch streams or
 * polling clients and answers the harness's RPC (load/messages.ts). It has no
 * timers of its own beyond what a request asks for, and exits when its
 * parent goes away.
 */
import { nowMs } from '../clock.js';
import { percentile } from '../stats.js';
import type {
  CollectArgs,
  CollectResult,
  Counters,
  Method,
  OpenArgs,
  OpenResult,
  PollResult,
  PollRunArgs,
  ReplyMessage,
  RequestMessage,
  ResumeArgs,
  ResumeResult,
  WatchSpec,
  WorkerApi,
} from './messages.js';
import { MAX_SOCKETS_PER_WORKER } from './messages.js';
import { WatchConn, type ConnSink } from './watch-conn.js';
import { Poller, type PollOutcome } from './poller.js';

/** Receipts kept for revisions nobody collected yet; the oldest is dropped past this. */
const MAX_TRACKED_REVISIONS = 256;

interface Receipt {
  times: Float64Array;
  count: number;
}

const conns: WatchConn[] = [];
let spec: WatchSpec | undefined;
const receipts = new Map<number, Receipt>();
const waiters = new Map<number, () => void>();
let positionWaiter: { until: number; remaining: number; done: () => void } | undefined;
const counters: Counters = { open: 0, closedByServer: 0, errorEvents: 0, errorCodes: {}, unparsedLines: 0, lines: 0, bodyBytes: 0, wireBytes: 0 };

/** Open connections, kept by onOpenChange (counting them per receipt would cost O(N) each). */
let openConns = 0;

function openCount(): number {
  return openConns;
}

const sink: ConnSink = {
  onChange(conn, revision, at) {
    let r = receipts.get(revision);
    if (!r) {
      if (receipts.size >= MAX_TRACKED_REVISIONS) {
        const oldest = receipts.keys().next().value;
        if (oldest !== undefined) receipts.delete(oldest);
      }
      r = { times: new Float64Array(conns.length).fill(Number.NaN), count: 0 };
      receipts.set(revision, r);
    }
    if (conn.index < r.times.length && Number.isNaN(r.times[conn.index] ?? 0)) {
      r.times[conn.index] = at;
      r.count++;
      if (r.count >= openConns) waiters.get(revision)?.();
    }
  },
  onPosition(conn, at) {
    const w = positionWaiter;
    if (w && Number.isNaN(conn.reachedAt) && conn.position >= w.until) {
      conn.reachedAt = at;
      if (--w.remaining <= 0) w.done();
    }
  },
  onErrorEvent(code) {
    counters.errorEvents++;
    counters.errorCodes[code] = (counters.errorCodes[code] ?? 0) + 1;
  },
  onUnparsed() {
    counters.unparsedLines++;
  },
  onOpenChange(_conn, open) {
    openConns += open ? 1 : -1;
  },
};

/** Runs `tasks` with at most `limit` in flight. */
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

function sample(errors: string[], err: unknown): void {
  if (errors.length < 5) errors.push(err instanceof Error ? err.message : String(err));
}

async function open(args: OpenArgs): Promise<OpenResult> {
  if (conns.length + args.count > MAX_SOCKETS_PER_WORKER) {
    throw new Error(`a worker holds at most ${MAX_SOCKETS_PER_WORKER} sockets (ulimit -n); asked for ${conns.length + args.count}`);
  }
  spec = args.spec;
  const first = conns.length;
  for (let i = 0; i < args.count; i++) {
    const address = args.localAddresses[Math.floor(i / args.perAddress) % args.localAddresses.length] ?? '127.0.0.1';
    conns.push(new WatchConn(first + i, first + i, address, args.spec.gtRevision, sink));
  }
  const errors: string[] = [];
  let failed = 0;
  await bounded(args.count, args.concurrency, async (i) => {
    const c = conns[first + i];
    if (!c) return;
    try {
      await c.open(args.spec, args.spec.gtRevision, args.spec.atTail, args.timeoutMs);
    } catch (err) {
      failed++;
      sample(errors, err);
    }
  });
  return { opened: args.count - failed, failed, errors };
}

function close(args: { forget: boolean }): { closed: number } {
  let closed = 0;
  for (const c of conns) {
    if (c.state === 'open' || c.state === 'connecting') closed++;
    c.close();
  }
  receipts.clear();
  if (args.forget) conns.length = 0;
  return { closed };
}

function collectChange(args: CollectArgs): Promise<CollectResult> {
  return new Promise((resolve) => {
    const finish = (): void => {
      clearTimeout(timer);
      waiters.delete(args.revision);
      const r = receipts.get(args.revision);
      receipts.delete(args.revision);
      const times = new Float64Array(conns.length).fill(Number.NaN);
      if (r) times.set(r.times.subarray(0, Math.min(r.times.length, times.length)));
      let missing = 0;
      for (const c of conns) if (c.state === 'open' && Number.isNaN(times[c.index] ?? Number.NaN)) missing++;
      resolve({ times, missing });
    };
    const timer = setTimeout(finish, args.timeoutMs);
    waiters.set(args.revision, finish);
    const r = receipts.get(args.revision);
    if (r && r.count >= openCount()) finish();
  });
}

async function resume(args: ResumeArgs): Promise<ResumeResult> {
  const current = spec;
  if (!current) throw new Error('resume before open');
  const targets = conns.filter((c) => c.state !== 'open' && c.state !== 'connecting');
  const errors: string[] = [];
  let failed = 0;
  const startedAt = nowMs();
  let resolveAll: () => void = () => undefined;
  const allReached = new Promise<void>((resolve) => {
    resolveAll = resolve;
  });
  positionWaiter = { until: args.untilRevision, remaining: targets.length, done: resolveAll };
  for (const c of targets) c.reachedAt = Number.NaN;
  // Connections already at the target count as reached the moment they reopen.
  await bounded(targets.length, args.concurrency, async (i) => {
    const c = targets[i];
    if (!c) return;
    try {
      await c.open(current, c.position, true, args.timeoutMs);
      if (c.position >= args.untilRevision) sink.onPosition(c, nowMs());
    } catch (err) {
      failed++;
      sample(errors, err);
      if (positionWaiter && --positionWaiter.remaining <= 0) positionWaiter.done();
    }
  });
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([allReached, new Promise<void>((r) => (timer = setTimeout(r, args.timeoutMs)))]);
  clearTimeout(timer);
  positionWaiter = undefined;
  return {
    startedAt,
    reachedAt: Float64Array.from(targets, (c) => c.reachedAt),
    bodyBytes: Float64Array.from(targets, (c) => c.bodyBytes),
    wireBytes: Float64Array.from(targets, (c) => c.wireBytes),
    failed,
    errors,
  };
}

function getCounters(): Counters {
  let lines = 0;
  let bodyBytes = 0;
  let wireBytes = 0;
  let closedByServer = 0;
  for (const c of conns) {
    lines += c.lines;
    bodyBytes += c.bodyBytes;
    wireBytes += c.wireBytes;
    if (c.closedByServer) closedByServer++;
  }
  return { ...counters, open: openCount(), lines, bodyBytes, wireBytes, closedByServer };
}

async function pollRun(args: PollRunArgs): Promise<PollResult> {
  const pollers: Poller[] = [];
  for (let i = 0; i < args.count; i++) {
    const address = args.localAddresses[Math.floor(i / args.perAddress) % args.localAddresses.length] ?? '127.0.0.1';
    pollers.push(new Poller(args.spec, i, address));
  }
  const start = nowMs();
  const end = start + args.durationMs;
  const result: PollResult = { polls: 0, full: 0, notModified: 0, failed: 0, bodyBytes: 0, wireBytes: 0, latenciesMs: new Float64Array(0), errors: [] };
  const latencies: number[] = [];
  const onOutcome = (o: PollOutcome | Error): void => {
    result.polls++;
    if (o instanceof Error) {
      result.failed++;
      sample(result.errors, o);
      return;
    }
    latencies.push(o.latencyMs);
    result.bodyBytes += o.bodyBytes;
    if (o.status === 200) result.full++;
    else if (o.status === 304) result.notModified++;
    else result.failed++;
  };
  // Pollers start at random phases, as independent clients would.
  try {
    await Promise.all(pollers.map((p) => p.run(start + Math.random() * args.intervalMs, end, args.intervalMs, onOutcome)));
  } finally {
    result.wireBytes = pollers.reduce((n, p) => n + p.wireBytes, 0);
    for (const p of pollers) p.close();
  }
  result.latenciesMs = Float64Array.from([percentile(latencies, 50), percentile(latencies, 99), Math.max(0, ...latencies)]);
  return result;
}

const handlers: { [M in Method]: (args: WorkerApi[M]['args']) => Promise<WorkerApi[M]['result']> | WorkerApi[M]['result'] } = {
  open,
  close,
  collectChange,
  resume,
  counters: getCounters,
  clock: () => ({ now: nowMs() }),
  pollRun,
};

function isRequest(m: unknown): m is RequestMessage {
  return typeof m === 'object' && m !== null && 'id' in m && 'method' in m && typeof m.method === 'string' && m.method in handlers;
}

function reply(msg: ReplyMessage): void {
  process.send?.(msg);
}

async function dispatch<M extends Method>(req: RequestMessage<M>): Promise<WorkerApi[M]['result']> {
  const handler = handlers[req.method] as (args: WorkerApi[M]['args']) => Promise<WorkerApi[M]['result']> | WorkerApi[M]['result'];
  return handler(req.args);
}

process.on('message', (m: unknown) => {
  if (!isRequest(m)) {
    process.stderr.write(`bench worker: ignoring a message that is not a request: ${JSON.stringify(m).slice(0, 200)}\n`);
    return;
  }
  dispatch(m).then(
    (result) => reply({ id: m.id, ok: true, result }),
    (err: unknown) => reply({ id: m.id, ok: false, error: err instanceof Error ? err.message : String(err) }),
  );
});

// The harness owns this process: when the IPC channel closes, leave, resetting every socket.
process.on('disconnect', () => {
  close({ forget: true });
  process.exit(0);
});
