import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { track } from '../children.js';
import { nowMs } from '../clock.js';
import { log } from '../log.js';
import { allocateAddresses, SOCKETS_PER_ADDRESS } from './loopback.js';
import { RpcChild } from './rpc-child.js';
import {
  MAX_SOCKETS_PER_WORKER,
  type Counters,
  type PollResult,
  type PollSpec,
  type ResumeResult,
  type WatchSpec,
  type WorkerApi,
} from './messages.js';

const WORKER = fileURLToPath(new URL('./worker.js', import.meta.url));

/** Sockets per worker by default: well under the per-process file limit. */
export const DEFAULT_SOCKETS_PER_WORKER = 15_000;

export function workersFor(sockets: number, perWorker = DEFAULT_SOCKETS_PER_WORKER): number {
  return Math.max(1, Math.ceil(sockets / perWorker));
}

/** A load worker process (see RpcChild) and the sockets it holds. */
class WorkerHandle extends RpcChild<WorkerApi> {
  sockets = 0;
}

/** Receive times of one change over every watcher of the pool, on the harness clock. */
export interface ChangeReceipts {
  times: Float64Array;
  missing: number;
}

export interface OpenOptions {
  concurrency?: number;
  timeoutMs?: number;
  perAddress?: number;
}

/**
 * The harness side of the load generator: W forked worker processes, each
 * holding fewer than MAX_SOCKETS_PER_WORKER sockets bound to their own
 * loopback source addresses. Watchers are spread evenly over the workers.
 */
export class LoadPool {
  /** Largest clock uncertainty (half the fastest ping) over the workers, ms. */
  clockUncertaintyMs = 0;

  private constructor(private readonly workers: WorkerHandle[]) {}

  static async start(count: number): Promise<LoadPool> {
    const handles: WorkerHandle[] = [];
    for (let i = 0; i < count; i++) {
      const child = fork(WORKER, [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: ['--max-old-space-size=2048'] });
      track(child);
      handles.push(new WorkerHandle(child));
    }
    const pool = new LoadPool(handles);
    for (const w of handles) pool.clockUncertaintyMs = Math.max(pool.clockUncertaintyMs, await w.calibrate());
    return pool;
  }

  get size(): number {
    return this.workers.length;
  }

  /** Watchers currently assigned (open or not). */
  get sockets(): number {
    return this.workers.reduce((n, w) => n + w.sockets, 0);
  }

  /** Opens `count` watch streams spread over the workers; fails if any fails. */
  async open(spec: WatchSpec, count: number, opts: OpenOptions = {}): Promise<void> {
    const per = this.split(count);
    const started = nowMs();
    const results = await Promise.all(
      this.workers.map((w, i) => {
        const n = per[i] ?? 0;
        if (n === 0) return Promise.resolve({ opened: 0, failed: 0, errors: [] });
        if (w.sockets + n > MAX_SOCKETS_PER_WORKER) throw new Error(`worker ${i} would hold ${w.sockets + n} sockets (limit ${MAX_SOCKETS_PER_WORKER})`);
        w.sockets += n;
        const perAddress = opts.perAddress ?? SOCKETS_PER_ADDRESS;
        return w.call('open', {
          spec,
          count: n,
          localAddresses: allocateAddresses(n, perAddress),
          perAddress,
          concurrency: opts.concurrency ?? 200,
          timeoutMs: opts.timeoutMs ?? 30_000,
        });
      }),
    );
    const failed = results.reduce((n, r) => n + r.failed, 0);
    log.debug({ count, workers: this.workers.length, ms: Math.round(nowMs() - started) }, 'watchers opened');
    if (failed > 0) throw new Error(`${failed} of ${count} watch streams failed to open: ${results.flatMap((r) => r.errors).slice(0, 3).join('; ')}`);
  }

  private split(count: number): number[] {
    const w = this.workers.length;
    return this.workers.map((_, i) => Math.floor(count / w) + (i < count % w ? 1 : 0));
  }

  /** Waits until every open watcher received the change at `revision` (or the timeout). */
  async collectChange(revision: number, timeoutMs: number): Promise<ChangeReceipts> {
    const parts = await Promise.all(this.workers.map((w) => w.call('collectChange', { revision, timeoutMs }).then((r) => ({ r, w }))));
    const total = parts.reduce((n, p) => n + p.r.times.length, 0);
    const times = new Float64Array(total);
    let at = 0;
    let missing = 0;
    for (const { r, w } of parts) {
      for (let i = 0; i < r.times.length; i++) times[at + i] = (r.times[i] ?? Number.NaN) - w.offset;
      at += r.times.length;
      missing += r.missing;
    }
    return { times, missing };
  }

  /**
   * Resets every connection (TCP RST). They keep their positions for a later
   * `resume`, unless `forget`: then they are dropped and later opens start afresh.
   */
  async closeAll(opts: { forget?: boolean } = {}): Promise<number> {
    const forget = opts.forget ?? false;
    const r = await Promise.all(this.workers.map((w) => w.call('close', { forget })));
    if (forget) for (const w of this.workers) w.sockets = 0;
    return r.reduce((n, x) => n + x.closed, 0);
  }

  /** Reopens every closed watcher from its own position, all at once; times on the harness clock. */
  async resume(untilRevision: number, timeoutMs: number, concurrency = 500): Promise<ResumeResult> {
    const parts = await Promise.all(this.workers.map((w) => w.call('resume', { untilRevision, timeoutMs, concurrency }).then((r) => ({ r, w }))));
    const cat = (pick: (r: ResumeResult) => Float64Array, shift: (w: WorkerHandle) => number): Float64Array => {
      const out: number[] = [];
      for (const { r, w } of parts) for (const v of pick(r)) out.push(v - shift(w));
      return Float64Array.from(out);
    };
    return {
      startedAt: Math.min(...parts.map(({ r, w }) => r.startedAt - w.offset)),
      reachedAt: cat((r) => r.reachedAt, (w) => w.offset),
      bodyBytes: cat((r) => r.bodyBytes, () => 0),
      wireBytes: cat((r) => r.wireBytes, () => 0),
      failed: parts.reduce((n, p) => n + p.r.failed, 0),
      errors: parts.flatMap((p) => p.r.errors).slice(0, 5),
    };
  }

  async counters(): Promise<Counters> {
    const all = await Promise.all(this.workers.map((w) => w.call('counters', {})));
    const sum: Counters = { open: 0, closedByServer: 0, errorEvents: 0, errorCodes: {}, unparsedLines: 0, lines: 0, bodyBytes: 0, wireBytes: 0 };
    for (const c of all) {
      sum.open += c.open;
      sum.closedByServer += c.closedByServer;
      sum.errorEvents += c.errorEvents;
      sum.unparsedLines += c.unparsedLines;
      sum.lines += c.lines;
      sum.bodyBytes += c.bodyBytes;
      sum.wireBytes += c.wireBytes;
      for (const [k, v] of Object.entries(c.errorCodes)) sum.errorCodes[k] = (sum.errorCodes[k] ?? 0) + v;
    }
    return sum;
  }

  /** N pollers spread over the workers, each listing every `intervalMs` for `durationMs` (random phases). */
  async pollRun(spec: PollSpec, count: number, intervalMs: number, durationMs: number): Promise<PollResult[]> {
    const per = this.split(count);
    return Promise.all(
      this.workers.map((w, i) =>
        w.call('pollRun', { spec, count: per[i] ?? 0, localAddresses: allocateAddresses(per[i] ?? 0), perAddress: SOCKETS_PER_ADDRESS, intervalMs, durationMs }),
      ),
    );
  }

  /** Ends the workers (they reset their sockets when the IPC channel closes). */
  async stop(): Promise<void> {
    await Promise.all(
      this.workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            if (w.child.exitCode !== null || w.child.signalCode !== null) return resolve();
            const timer = setTimeout(() => w.child.kill('SIGKILL'), 10_000);
            w.child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            w.child.disconnect();
          }),
      ),
    );
  }
}
