import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');
/**
 * The CLI the tests spawn. SCALEOUT_MAIN points them at another build (e.g. a
 * copy of dist/ with a behaviour broken on purpose, to check that a test fails).
 */
export const MAIN = process.env['SCALEOUT_MAIN'] ?? join(ROOT, 'dist', 'cli', 'main.js');
/** The admin token every replica of these tests is started with. */
export const ADMIN_TOKEN = 'fpa_scaleout_test_admin_token';
/** Output kept per process for failure messages; older output is dropped. */
const OUTPUT_LIMIT = 64 * 1024;
const START_TIMEOUT_MS = 60_000;

const live = new Set<ChildProcess>();
/** Every process started in this test file, for failure output. */
const started: ServerProcess[] = [];
let exitHookInstalled = false;

/** Builds dist/ when a direct vitest run hasn't (`npm test` builds it first). */
export function ensureBuilt(): void {
  if (!existsSync(MAIN)) spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: ROOT, stdio: 'ignore' });
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npx tsc -p tsconfig.json`);
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * One `fleetplane serve` process. Its output is kept (the last 64 KB of
 * each stream) for failure messages.
 */
export class ServerProcess {
  stdout = '';
  stderr = '';
  url = '';
  readonly exited: Promise<Exit>;
  private exitInfo: Exit | undefined;

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    live.add(child);
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (this.stdout = keepTail(this.stdout + d)));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (this.stderr = keepTail(this.stderr + d)));
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        live.delete(child);
        this.exitInfo = { code, signal };
        resolve(this.exitInfo);
      }),
    );
  }

  get pid(): number {
    const pid = this.child.pid;
    if (pid === undefined) throw new Error(`${this.name} has no pid`);
    return pid;
  }

  get alive(): boolean {
    return this.exitInfo === undefined;
  }

  /** Waits until stdout matches `re`; throws with the output if the process exits or time runs out first. */
  async waitForOutput(re: RegExp, timeoutMs = START_TIMEOUT_MS): Promise<RegExpExecArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = re.exec(this.stdout);
      if (m) return m;
      if (!this.alive || Date.now() > deadline) {
        throw new Error(`${this.name} ${this.alive ? 'did not print' : 'exited before printing'} ${re}\n${this.output()}`);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Sends `signal` and waits for the exit. */
  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<Exit> {
    if (this.alive) this.child.kill(signal);
    return this.exited;
  }

  output(): string {
    return `--- ${this.name} stdout ---\n${this.stdout}\n--- ${this.name} stderr ---\n${this.stderr}`;
  }
}

function keepTail(s: string): string {
  return s.length > OUTPUT_LIMIT ? s.slice(-OUTPUT_LIMIT) : s;
}

/** Faults injected into a replica through test/support/serve-with-faults.mjs (the product has no flag for them). */
export interface ReplicaFaults {
  /** Discard every Nth incoming bus signal. */
  busDropEvery?: number;
}

const FAULTY_MAIN = join(ROOT, 'test', 'support', 'serve-with-faults.mjs');

/** Spawns `node dist/cli/main.js serve ...args` (tracked: `killAllProcesses` ends it); with `faults`, the test-only launcher. */
export function spawnServe(name: string, args: readonly string[], faults?: ReplicaFaults): ServerProcess {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // A test process that dies anyway must not leave servers behind.
    process.once('exit', () => {
      for (const c of live) c.kill('SIGKILL');
    });
  }
  const env = faults ? { ...process.env, FLEETPLANE_TEST_BUS_DROP_EVERY: String(faults.busDropEvery ?? 0) } : process.env;
  const child = spawn(process.execPath, [faults ? FAULTY_MAIN : MAIN, 'serve', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const p = new ServerProcess(name, child);
  started.push(p);
  return p;
}

export interface ReplicaOptions {
  databaseUrl: string;
  /** Extra settings, e.g. ['--bus', 'redis', '--redis-url', url]. */
  args?: readonly string[];
  faults?: ReplicaFaults;
}

/**
 * Starts one replica on 127.0.0.1, any free port, and waits until it
 * listens. Its private URL is advertised as `http://<name>.invalid` (no
 * private listener), so its row in GET /api/replicas can be told apart.
 */
export async function startReplica(name: string, options: ReplicaOptions): Promise<ServerProcess> {
  const p = spawnServe(name, [
    '--database-url',
    options.databaseUrl,
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--admin-token',
    ADMIN_TOKEN,
    '--log-level',
    'warn',
    '--advertise-private-url',
    advertisedUrl(name),
    ...(options.args ?? []),
  ], options.faults);
  try {
    const [, url] = await p.waitForOutput(/fleetplane is listening on (http:\/\/\S+?)[\s(]/);
    p.url = url ?? '';
  } catch (err) {
    await p.stop();
    throw err;
  }
  return p;
}

export function advertisedUrl(name: string): string {
  return `http://${name}.invalid`;
}

/** SIGKILLs every server process these helpers started that is still running, and waits for them. */
export async function killAllProcesses(): Promise<void> {
  const waits = [...live].map(
    (c) =>
      new Promise<void>((resolve) => {
        if (c.exitCode !== null || c.signalCode !== null) return resolve();
        c.once('exit', () => resolve());
        c.kill('SIGKILL');
      }),
  );
  await Promise.all(waits);
}

/** What every server process of this test file printed (dead ones included). */
export function allOutput(): string {
  return started.map((p) => p.output()).join('\n');
}

/** Prints every server process's output after a failed test (call once per test file, at top level). */
export function printOutputOnFailure(): void {
  afterEach((ctx) => {
    if (ctx.task.result?.state === 'fail') process.stderr.write(`\n${allOutput()}\n`);
  });
}
