import { existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

export const PG_BIN = '/usr/lib/postgresql/15/bin';
export const IN_CI = process.env['CI'] === 'true' || process.env['CI'] === '1';

export function hasPostgres(): boolean {
  return existsSync(`${PG_BIN}/initdb`) && existsSync(`${PG_BIN}/pg_ctl`);
}

export function which(cmd: string): string | undefined {
  try {
    return execFileSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

export function hasRedis(): boolean {
  return which('redis-server') !== undefined;
}

/**
 * Decides whether a suite that needs `what` runs. In CI a missing binary is a
 * failure; elsewhere the suite is skipped with a loud message.
 */
export function requireBinary(what: string, present: boolean): boolean {
  if (present) return true;
  const msg = `\n*** ${what} is not installed: its integration tests cannot run. Install it (see .ci/run). ***\n`;
  if (IN_CI) throw new Error(msg);
  process.stderr.write(`${msg}*** Skipping them because this is not CI. ***\n`);
  return false;
}

/** Prometheus's `promtool` (Debian package `prometheus`): lints the `/metrics` output. */
export function hasPromtool(): boolean {
  return which('promtool') !== undefined;
}

/** The Prometheus server (Debian package `prometheus`): scrapes a test server for real. */
export function hasPrometheus(): boolean {
  return which('prometheus') !== undefined;
}
