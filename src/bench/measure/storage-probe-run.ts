import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { killGroup, track } from '../children.js';
import { nowMs } from '../clock.js';
import { EVENT_PREFIX, type ProbeEvent, type ProbeJob, type WriteSeries } from './storage-probe-messages.js';
import { straceArgs } from './strace-window.js';

export const PROBE = fileURLToPath(new URL('./storage-probe.js', import.meta.url));

type Ready = Extract<ProbeEvent, { event: 'ready' }>;
type Window = Extract<ProbeEvent, { event: 'window' }>;

/** What one probe process reported. */
export interface ProbeOutcome {
  ready: Ready;
  /** From the harness's spawn() to the `ready` line (includes spawning node, and strace when traced). */
  spawnToReadyMs: number;
  sequential?: WriteSeries;
  concurrent?: WriteSeries;
  window?: Window;
  closeMs: number;
}

export interface ProbeRunOptions {
  job: ProbeJob;
  /** Run under strace, writing its output here. */
  straceOut?: string;
  /** Called once the probe is ready, while it waits (job.holdAfterReady); gets the probe's node pid. */
  onReady?: (ready: Ready) => Promise<void>;
  timeoutMs: number;
  signal: AbortSignal;
}

/** The command line a probe runs with (recorded in results). */
export function probeCommand(job: ProbeJob, straceOut?: string): string[] {
  const node = [process.execPath, PROBE, JSON.stringify(job)];
  return straceOut === undefined ? node : ['strace', ...straceArgs(straceOut), ...node];
}

/**
 * Runs one storage probe process to its end, in its own process group
 * (tracked: it dies with the harness). Rejects when it fails, times out or
 * `signal` aborts; then the process group is killed — an embedded
 * PostgreSQL (a session of its own) is the caller's to stop, see
 * server/data-dir.ts.
 */
export function runProbe(o: ProbeRunOptions): Promise<ProbeOutcome> {
  const [file = '', ...args] = probeCommand(o.job, o.straceOut);
  const spawnedAt = nowMs();
  const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  track(child, { group: true });
  // A write after the probe exited must not become an unhandled EPIPE.
  child.stdin?.on('error', () => undefined);
  const tag = `[storage-probe ${o.job.engine} ${child.pid ?? '?'}]`;
  let stderrTail = '';
  child.stderr?.setEncoding('utf8').on('data', (s: string) => {
    stderrTail = (stderrTail + s).slice(-8192);
    for (const line of s.split('\n')) if (line.trim() !== '') process.stderr.write(`${tag} ${line}\n`);
  });
  return new Promise<ProbeOutcome>((resolve, reject) => {
    const got: Partial<ProbeOutcome> = {};
    let failed = false;
    const fail = (err: Error): void => {
      if (failed) return;
      failed = true;
      clearTimeout(timer);
      o.signal.removeEventListener('abort', onAbort);
      killGroup(child, 'SIGKILL');
      reject(err);
    };
    const onAbort = (): void => fail(o.signal.reason instanceof Error ? o.signal.reason : new Error(String(o.signal.reason)));
    const timer = setTimeout(() => fail(new Error(`${tag} did not finish within ${o.timeoutMs / 1000} s`)), o.timeoutMs);
    if (o.signal.aborted) return onAbort();
    o.signal.addEventListener('abort', onAbort, { once: true });
    const onEvent = (e: ProbeEvent): void => {
      switch (e.event) {
        case 'ready':
          got.ready = e;
          got.spawnToReadyMs = nowMs() - spawnedAt;
          if (o.job.holdAfterReady) {
            void (o.onReady ?? (async () => undefined))(e).then(
              () => child.stdin?.write('continue\n'),
              (err: unknown) => fail(err instanceof Error ? err : new Error(String(err))),
            );
          }
          break;
        case 'sequential':
          got.sequential = e.series;
          break;
        case 'concurrent':
          got.concurrent = e.series;
          break;
        case 'window':
          got.window = e;
          break;
        case 'done':
          got.closeMs = e.closeMs;
          break;
      }
    };
    if (child.stdout) {
      createInterface({ input: child.stdout }).on('line', (line) => {
        if (line.startsWith(EVENT_PREFIX)) onEvent(JSON.parse(line.slice(EVENT_PREFIX.length)) as ProbeEvent);
      });
    }
    child.once('error', (err) => fail(err));
    // `close`, not `exit`: the last event and the reason on stderr are read by then.
    child.once('close', (code, sig) => {
      if (failed) return;
      if (code !== 0 || got.ready === undefined || got.closeMs === undefined) {
        fail(new Error(`${tag} exited with ${sig ?? code} before finishing: ${stderrTail.trim().slice(-600)}`));
        return;
      }
      clearTimeout(timer);
      o.signal.removeEventListener('abort', onAbort);
      child.stdin?.end();
      resolve(got as ProbeOutcome);
    });
  });
}
