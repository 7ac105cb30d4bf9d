import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { killGroup, track } from '../children.js';
import { FleetApi } from '../http-api.js';
import { log } from '../log.js';
import { procTreeStats, type ProcStats } from '../proc-stats.js';
import { promValue } from '../prom-text.js';
import { sleep } from '../../util/sleep.js';
import { waitForLine } from './wait-line.js';

const CLI = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
const GC_HOOK = fileURLToPath(new URL('./gc-hook.js', import.meta.url));

export const BENCH_ADMIN_TOKEN = 'bench-admin-token';
/** Names a directory: every server the harness starts writes a V8 CPU profile there when it exits. */
export const CPU_PROFILE_ENV = 'FLEETPLANE_BENCH_CPU_PROFILE';

/** The server exited before listening: the settings are refused (e.g. `--workers` not supported yet). */
export class ServerRefusedError extends Error {
  override readonly name = 'ServerRefusedError';
  constructor(
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(`fleetplane serve exited with ${exitCode} before listening: ${stderr.trim().slice(-500)}`);
  }
}

export interface FleetServerOptions {
  /** `serve` flags beyond the benchmark's defaults (host, port, admin token, log level, memory). */
  flags?: readonly string[];
  /** Storage: PGlite in memory (default), the embedded PostgreSQL in `dataDir`, or this PostgreSQL URL. */
  databaseUrl?: string;
  dataDir?: string;
  /** Port to listen on (default: any free port); a restart on the same data keeps its port. */
  port?: number;
  startTimeoutMs?: number;
}

/**
 * A `fleetplane serve` process started by the harness in its own process
 * group (so `--workers` children end with it), tracked for cleanup on exit.
 */
export class FleetServer {
  private stderrTail = '';

  private constructor(
    readonly child: ChildProcess,
    readonly url: string,
    /** The exact command line, recorded in results. */
    readonly argv: readonly string[],
    readonly multiProcess: boolean,
  ) {
    child.stderr?.on('data', (c: Buffer) => {
      this.stderrTail = (this.stderrTail + c.toString('utf8')).slice(-16384);
    });
  }

  static async start(opts: FleetServerOptions = {}): Promise<FleetServer> {
    const flags = opts.flags ?? [];
    const storage = opts.databaseUrl ? ['--database-url', opts.databaseUrl] : opts.dataDir ? ['--data-dir', opts.dataDir] : ['--memory'];
    const serveArgs = ['serve', '--host', '127.0.0.1', '--port', String(opts.port ?? 0), '--admin-token', BENCH_ADMIN_TOKEN, '--log-level', 'warn', '--stun-port', '0', '--stun-alt-port', '0', ...storage, ...flags];
    // A CPU profile of each server process, written when it exits (bench/README.md "Profiling").
    const profDir = process.env[CPU_PROFILE_ENV];
    const profile = profDir ? ['--cpu-prof', '--cpu-prof-dir', profDir] : [];
    const argv = ['--expose-gc', ...profile, '--import', GC_HOOK, CLI, ...serveArgs];
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    track(child, { group: true });
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => {
      const text = c.toString('utf8');
      stderr = (stderr + text).slice(-16384);
      for (const line of text.split('\n')) if (line.trim() !== '') process.stderr.write(`[server ${child.pid}] ${line}\n`);
    });
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(new Error('fleetplane serve did not start listening in time')), opts.startTimeoutMs ?? 60_000);
    const exited = new Promise<never>((_, reject) => {
      child.once('exit', (code) => {
        // Give the stderr pipe a moment to deliver the reason.
        setTimeout(() => reject(new ServerRefusedError(code, stderr)), 100);
      });
    });
    try {
      const m = await Promise.race([waitForLine(child.stdout ?? failNoStdout(), /listening on (http:\/\/\S+)/, ac.signal), exited]);
      const url = m[1] ?? '';
      const workersIdx = flags.indexOf('--workers');
      const multi = workersIdx >= 0 && Number(flags[workersIdx + 1]) > 1;
      log.debug({ url, pid: child.pid, argv: serveArgs }, 'server started');
      child.stdout?.resume();
      return new FleetServer(child, url, ['node', ...argv], multi);
    } catch (err) {
      ac.abort();
      killGroup(child, 'SIGKILL');
      throw err;
    } finally {
      clearTimeout(timer);
      exited.catch(() => undefined);
    }
  }

  /** `fleetplane serve …` as started (recorded in results). */
  get commandLine(): string {
    return `fleetplane ${this.argv.slice(5).join(' ')}`;
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  api(maxSockets?: number): FleetApi {
    return new FleetApi(this.url, BENCH_ADMIN_TOKEN, maxSockets);
  }

  /** CPU and RSS of the server's whole process tree (all workers). */
  procStats(): ProcStats {
    return procTreeStats(this.pid);
  }

  /**
   * Server CPU seconds: from /metrics (µs resolution) for one process, from
   * /proc over the process tree when the server runs several workers (a
   * /metrics scrape would reach only one of them).
   */
  async cpuSeconds(api: FleetApi): Promise<number> {
    if (this.multiProcess) return this.procStats().cpuSeconds;
    return promValue(await api.metricsText(), 'process_cpu_seconds_total');
  }

  /**
   * Full GC in every server process (see gc-hook.ts), then a pause for the
   * RSS to settle. Only the Node.js processes: an embedded PostgreSQL backend
   * takes SIGUSR2 as a crash, and the whole database restarts in recovery.
   */
  async collectGarbage(): Promise<void> {
    for (const pid of this.procStats().nodePids) {
      try {
        process.kill(pid, 'SIGUSR2');
      } catch (err) {
        log.warn({ err, pid }, 'could not signal a server process for GC');
      }
    }
    await sleep(1000);
  }

  get recentStderr(): string {
    return this.stderrTail;
  }

  /** SIGTERM (graceful: streams get `unavailable`), SIGKILL after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    killGroup(this.child, 'SIGTERM');
    const timer = setTimeout(() => {
      log.warn({ pid: this.pid }, 'server did not stop in time; killing it');
      killGroup(this.child, 'SIGKILL');
    }, graceMs);
    await exited;
    clearTimeout(timer);
    // Workers of a multi-process server may outlive the primary briefly.
    killGroup(this.child, 'SIGKILL');
  }
}

function failNoStdout(): never {
  throw new Error('server process has no stdout pipe');
}
