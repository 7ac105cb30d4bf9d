import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { track } from '../children.js';
import { nowMs } from '../clock.js';
import { procTreeStats } from '../proc-stats.js';
import { sleep } from '../../util/sleep.js';
import type { RawFireResult, RawListening, RawReply, RawStats, RawWriteMode } from './messages.js';

const SERVER = fileURLToPath(new URL('./server.js', import.meta.url));

/** The harness's handle on the raw fan-out floor server process (raw-floor/server.ts). */
export class RawFloorServer {
  private nextId = 1;
  private readonly pending = new Map<number, (r: RawReply) => void>();

  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
  ) {
    child.on('message', (m: unknown) => {
      const r = m as RawReply;
      const p = this.pending.get(r.id);
      this.pending.delete(r.id);
      p?.(r);
    });
  }

  static async start(): Promise<RawFloorServer> {
    const child = fork(SERVER, [], { execArgv: ['--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    track(child);
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('raw-floor server did not start')), 15_000);
      child.once('message', (m: unknown) => {
        clearTimeout(timer);
        resolve((m as RawListening).port);
      });
      child.once('exit', (code) => reject(new Error(`raw-floor server exited with ${code}`)));
    });
    return new RawFloorServer(child, port);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  private call(req: { op: 'fire'; mode: RawWriteMode; revision: number } | { op: 'stats' } | { op: 'gc' } | { op: 'list'; base64: string }): Promise<RawReply> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.child.send({ ...req, id });
    });
  }

  /** Writes the line to every held response; `sentAt` is the harness's t0 (nowMs()). */
  async fire(mode: RawWriteMode, revision: number): Promise<RawFireResult & { sentAt: number }> {
    const sentAt = nowMs();
    const r = await this.call({ op: 'fire', mode, revision });
    if (!r.ok) throw new Error(`raw-floor fire: ${r.error}`);
    return { ...(r.result as RawFireResult), sentAt };
  }

  /**
   * From now on every new request is answered with these pre-framed chunks
   * right after the head (then held like the others): the raw floor of an
   * initial list, the same bytes fleetplane sends.
   */
  async setListBody(framed: Buffer): Promise<void> {
    const r = await this.call({ op: 'list', base64: framed.toString('base64') });
    if (!r.ok) throw new Error(`raw-floor list: ${r.error}`);
  }

  async stats(): Promise<RawStats> {
    const r = await this.call({ op: 'stats' });
    if (!r.ok) throw new Error(`raw-floor stats: ${r.error}`);
    return r.result as RawStats;
  }

  /** RSS (from /proc, like the fleetplane server's) as-is, then after a full GC; `gcFirst` as in idle-memory. */
  async settledRss(gcFirst: boolean, settleMs: number): Promise<{ rssBytes: number; rssAfterGcBytes: number }> {
    if (gcFirst) {
      await this.call({ op: 'gc' });
      await sleep(settleMs);
    }
    const rssBytes = procTreeStats(this.pid).rssBytes;
    await this.call({ op: 'gc' });
    await sleep(1000);
    return { rssBytes, rssAfterGcBytes: procTreeStats(this.pid).rssBytes };
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.disconnect();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
}
