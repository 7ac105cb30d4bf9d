import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** The system calls that force data to disk, as the `storage` scenario counts them. */
export const SYNC_CALLS = ['fsync', 'fdatasync', 'sync_file_range', 'msync'] as const;

/** `strace` arguments before the traced command: every thread and child, these calls only, wall-clock stamps. */
export function straceArgs(outFile: string): string[] {
  return ['-f', '-qq', '-ttt', '-e', `trace=${SYNC_CALLS.join(',')}`, '-o', outFile];
}

/** Whether `strace` runs here (and can trace: a container may forbid ptrace). */
export function straceAvailable(): { ok: true; version: string } | { ok: false; why: string } {
  const v = spawnSync('strace', ['-V'], { encoding: 'utf8' });
  if (v.error || v.status !== 0) return { ok: false, why: `strace is not installed (${v.error?.message ?? `exit ${v.status}`})` };
  const t = spawnSync('strace', ['-f', '-qq', '-e', 'trace=fsync', '-o', '/dev/null', 'true'], { encoding: 'utf8' });
  if (t.status !== 0) return { ok: false, why: `strace cannot trace here: ${t.stderr.trim().slice(0, 200)}` };
  return { ok: true, version: v.stdout.split('\n')[0]?.trim() ?? 'strace' };
}

/** Calls by name: those that began inside the window, and all of the traced run. */
export interface SyncCounts {
  inWindow: Record<string, number>;
  wholeRun: Record<string, number>;
  /** Processes (pids) that made a call inside the window. */
  windowPids: number;
}

// `1234 1712345678.123456 fdatasync(5 <unfinished ...>` or `… fdatasync(5) = 0`; a `<... resumed>` line is the same call's end.
const CALL = /^(\d+)\s+(\d+\.\d+)\s+([a-z_0-9]+)\(/;

/** Counts the calls in an `strace -f -ttt -o FILE` output that began within [beginMs, endMs] (Unix ms). */
export function countSyncCalls(outFile: string, beginMs: number, endMs: number): SyncCounts {
  const inWindow: Record<string, number> = {};
  const wholeRun: Record<string, number> = {};
  const pids = new Set<string>();
  for (const name of SYNC_CALLS) {
    inWindow[name] = 0;
    wholeRun[name] = 0;
  }
  for (const line of readFileSync(outFile, 'utf8').split('\n')) {
    const m = CALL.exec(line);
    if (!m) continue;
    const [, pid = '', stamp = '', name = ''] = m;
    wholeRun[name] = (wholeRun[name] ?? 0) + 1;
    const ms = Number(stamp) * 1000;
    if (ms >= beginMs && ms <= endMs) {
      inWindow[name] = (inWindow[name] ?? 0) + 1;
      pids.add(pid);
    }
  }
  return { inWindow, wholeRun, windowPids: pids.size };
}

export function total(counts: Record<string, number>): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}
