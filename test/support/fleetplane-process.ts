/** `fleetplane` as a real process (dist/cli/main.js), for end-to-end tests of the command line. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');
export const MAIN = join(ROOT, 'dist', 'cli', 'main.js');

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface Run {
  child: ChildProcess;
  /** What it printed so far. */
  out: { stdout: string; stderr: string };
  exit: Promise<Exit>;
}

/**
 * Compiles dist/ when it may be older than src/ (`npm test` builds first;
 * a direct vitest run may not have, or may follow an edit), so the process
 * runs the code under test.
 */
export async function buildDist(): Promise<void> {
  const builder = join(ROOT, 'scripts', 'build-if-stale.mjs');
  const [cmd, args] = existsSync(builder) ? [process.execPath, [builder]] : ['npx', ['tsc', '-p', 'tsconfig.json']];
  if (!existsSync(builder) && existsSync(MAIN)) return;
  // Compile errors elsewhere in the tree still emit; what matters is that main.js exists.
  await new Promise((resolve) => spawn(cmd, args, { cwd: ROOT, stdio: 'ignore' }).once('close', resolve));
}

/** `fleetplane ...args` with `env` over this process's environment (undefined removes a variable). */
export function fleetplane(args: readonly string[], env: Record<string, string | undefined>): Run {
  const out = { stdout: '', stderr: '' };
  const merged: Record<string, string | undefined> = { ...process.env, ...env };
  for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k];
  const child = spawn(process.execPath, [MAIN, ...args], { cwd: ROOT, env: merged, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out.stdout += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (out.stderr += d));
  const exit = new Promise<Exit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal, ...out })));
  return { child, out, exit };
}
