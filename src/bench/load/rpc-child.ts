import type { ChildProcess } from 'node:child_process';
import { nowMs } from '../clock.js';
import { log } from '../log.js';

/** An RPC surface: method name → its arguments and result. Every child must answer `clock`. */
export type RpcApi<Api> = { [K in keyof Api]: { args: unknown; result: unknown } } & { clock: { args: Record<string, never>; result: { now: number } } };

type Reply = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: string };

/**
 * The harness's handle on one forked load process: requests `{id, method,
 * args}` over IPC, each answered by exactly one `{id, ok, result | error}`,
 * and the child's clock offset against the harness (from the fastest of 9
 * `clock` round trips; the uncertainty is half that round trip).
 */
export class RpcChild<Api extends RpcApi<Api>> {
  /** Child clock minus harness clock (ms). */
  offset = 0;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();

  constructor(readonly child: ChildProcess) {
    child.on('message', (m: unknown) => this.onMessage(m));
    child.once('exit', (code, sig) => {
      for (const p of this.pending.values()) p.reject(new Error(`load process exited (${code ?? sig})`));
      this.pending.clear();
    });
  }

  private onMessage(m: unknown): void {
    if (typeof m !== 'object' || m === null || !('id' in m)) {
      log.warn({ message: m }, 'load process sent something that is not a reply');
      return;
    }
    const msg = m as Reply;
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (msg.ok) p.resolve(msg.result);
    else p.reject(new Error(`load process: ${msg.error}`));
  }

  call<M extends keyof Api & string>(method: M, args: Api[M]['args']): Promise<Api[M]['result']> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ id, method, args }, (err) => {
        if (err) {
          this.pending.delete(id);
          reject(err);
        }
      });
    });
  }

  /** Measures the clock offset; returns its uncertainty (ms). */
  async calibrate(): Promise<number> {
    let best = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 9; i++) {
      const t0 = nowMs();
      const { now } = (await this.call('clock', {})) as { now: number };
      const t1 = nowMs();
      if (t1 - t0 < best) {
        best = t1 - t0;
        this.offset = now - (t0 + t1) / 2;
      }
    }
    return best / 2;
  }

  /** Disconnects (the child resets its sockets and exits); SIGKILL after 10 s. */
  stop(): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.child.exitCode !== null || this.child.signalCode !== null) return resolve();
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
      this.child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      if (this.child.connected) this.child.disconnect();
      else this.child.kill('SIGKILL');
    });
  }
}
