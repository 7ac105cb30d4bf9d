import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..', '..');
export const MAIN = join(ROOT, 'dist', 'cli', 'main.js');

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** `npm test` builds dist first (pretest); a direct vitest run may not have. */
export function ensureBuilt(): void {
  if (!existsSync(MAIN)) spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: ROOT, stdio: 'ignore' });
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build`);
}

function exited(child: ChildProcess, out: { stdout: string; stderr: string }): Promise<Exit> {
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, ...out })));
}

/** Spawns `fleetplane serve ...args`, collecting its output. */
export function serve(args: string[], env: Record<string, string> = {}) {
  const out = { stdout: '', stderr: '' };
  const child = spawn(process.execPath, [MAIN, 'serve', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out.stdout += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (out.stderr += d));
  const exit = exited(child, out);
  /** Waits until stdout matches `re` (or the process exits). */
  const waitFor = async (re: RegExp): Promise<RegExpExecArray> => {
    for (;;) {
      const m = re.exec(out.stdout);
      if (m) return m;
      const ended = await Promise.race([exit.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 50))]);
      if (ended) throw new Error(`serve exited before printing ${re}: ${out.stdout}\n${out.stderr}`);
    }
  };
  return { child, out, exit, waitFor };
}
