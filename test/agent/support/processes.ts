/**
 * Real `fleetplane` processes for the agent end-to-end tests: a server and
 * agents, optionally inside a network namespace (`prefix`).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, openSync, closeSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..', '..');
export const MAIN = join(ROOT, 'dist', 'cli', 'main.js');

/** `npm test` builds dist first (pretest); a direct vitest run may not have. */
export function ensureBuilt(): void {
  if (!existsSync(MAIN) || !existsSync(join(ROOT, 'dist', 'agent', 'agent.js'))) {
    spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: ROOT, stdio: 'ignore' });
  }
  if (!existsSync(join(ROOT, 'dist', 'agent', 'agent.js'))) throw new Error('dist/ could not be built');
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Proc {
  child: ChildProcess;
  exit: Promise<Exit>;
  /** Everything the process wrote so far (stdout and stderr). */
  output: () => string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit. */
  stop: (graceMs?: number) => Promise<Exit>;
}

export interface SpawnOptions {
  /** Runs the command under this prefix, e.g. `['ip', 'netns', 'exec', 'ns1']`. */
  prefix?: readonly string[];
  /** Output goes to this file instead of a pipe (for many processes). */
  logFile?: string;
  /** Extra `node` flags (e.g. heap limits). */
  nodeFlags?: readonly string[];
  env?: Record<string, string>;
}

/** Spawns `node ...args` (under `prefix` when given). */
export function spawnNode(args: readonly string[], o: SpawnOptions = {}): Proc {
  const argv = [...(o.nodeFlags ?? []), ...args];
  const [file, ...pre] = o.prefix && o.prefix.length > 0 ? [...o.prefix, process.execPath] : [process.execPath];
  let captured = '';
  let fd: number | undefined;
  if (o.logFile) fd = openSync(o.logFile, 'a');
  const child = spawn(file ?? process.execPath, [...pre, ...argv], {
    cwd: ROOT,
    env: { ...process.env, ...o.env },
    stdio: ['ignore', fd ?? 'pipe', fd ?? 'pipe'],
  });
  if (fd !== undefined) closeSync(fd);
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (captured += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (captured += d));
  const exit = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const output = (): string => (o.logFile ? readFileSync(o.logFile, 'utf8') : captured);
  const stop = async (graceMs = 10_000): Promise<Exit> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    try {
      return await exit;
    } finally {
      clearTimeout(timer);
    }
  };
  return { child, exit, output, stop };
}

/** Spawns `node dist/cli/main.js <command> ...args`. */
export function spawnFleetplane(command: 'serve' | 'agent', args: readonly string[], o: SpawnOptions = {}): Proc {
  return spawnNode([MAIN, command, ...args], o);
}

/** Waits until the output matches `re`; fails when the process exits first or after `timeoutMs`. */
export async function waitForOutput(p: Proc, re: RegExp, timeoutMs = 60_000): Promise<RegExpExecArray> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void p.exit.then(() => (exited = true));
  for (;;) {
    const m = re.exec(p.output());
    if (m) return m;
    if (exited) throw new Error(`the process exited before printing ${re}:\n${p.output().slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${re}:\n${p.output().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
