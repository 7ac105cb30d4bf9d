/**
 * Processes the bench starts inside a lab namespace (`ip netns exec`, which
 * execs the command in place: the pid is the command's own), tracked by
 * children.ts so that they die with the harness however it exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { track } from '../children.js';
import { sleep } from '../../util/sleep.js';

export interface NsExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface NsProcessOptions {
  /** Every line written (stdout and stderr) is appended here too. */
  logFile?: string;
  /** Keep all of stdout (e.g. a JSON report), not only the tail. */
  keepStdout?: boolean;
  env?: Record<string, string>;
}

/** How much of the output is kept in memory when not all of it is. */
const TAIL_CHARS = 64 * 1024;

export class NsProcess {
  #tail = '';
  #stdout = '';
  readonly exit: Promise<NsExit>;

  private constructor(
    readonly child: ChildProcess,
    readonly label: string,
    opts: NsProcessOptions,
  ) {
    const take = (stream: 'stdout' | 'stderr') => (text: string) => {
      this.#tail = (this.#tail + text).slice(-TAIL_CHARS);
      if (stream === 'stdout' && opts.keepStdout) this.#stdout += text;
      if (opts.logFile) appendFileSync(opts.logFile, text);
    };
    child.stdout?.setEncoding('utf8').on('data', take('stdout'));
    child.stderr?.setEncoding('utf8').on('data', take('stderr'));
    // 'close', not 'exit': by then everything it wrote has been read.
    this.exit = new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  }

  /** Runs `file args` in the namespace `prefix` enters (`ip netns exec <ns>`). */
  static start(prefix: readonly string[], file: string, args: readonly string[], label: string, opts: NsProcessOptions = {}): NsProcess {
    const [cmd, ...pre] = [...prefix, file];
    const child = spawn(cmd ?? file, [...pre, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...opts.env } });
    track(child);
    return new NsProcess(child, label, opts);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The last 64 KiB of what it wrote. */
  get output(): string {
    return this.#tail;
  }

  /** All of stdout (only with `keepStdout`). */
  get stdout(): string {
    return this.#stdout;
  }

  /** Waits until the output matches `re`; fails when the process exits first, or after `timeoutMs`. */
  async waitFor(re: RegExp, timeoutMs: number, signal?: AbortSignal): Promise<RegExpExecArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = re.exec(this.#tail);
      if (m) return m;
      signal?.throwIfAborted();
      if (!this.running) {
        const exit = await this.exit;
        const late = re.exec(this.#tail);
        if (late) return late;
        throw new Error(`${this.label} exited (${String(exit.code ?? exit.signal)}) before printing ${re}:\n${this.#tail.slice(-2000)}`);
      }
      if (Date.now() > deadline) throw new Error(`${this.label}: timed out waiting for ${re}:\n${this.#tail.slice(-2000)}`);
      await sleep(50);
    }
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit. */
  async stop(graceMs = 10_000): Promise<NsExit> {
    if (this.running) this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      return await this.exit;
    } finally {
      clearTimeout(timer);
    }
  }
}
