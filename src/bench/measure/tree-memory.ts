import { readFileSync } from 'node:fs';
import { procTreeStats } from '../proc-stats.js';

/** Resident memory of a process tree, two ways. */
export interface TreeMemory {
  /**
   * Sum of VmRSS: shared pages (PostgreSQL's shared buffers, shared
   * libraries) count once in every process that touched them.
   */
  rssBytes: number;
  /** Sum of Pss (/proc/<pid>/smaps_rollup): each shared page split among the processes sharing it. */
  pssBytes: number;
  processes: number;
  /** Command names, e.g. `node`, `postgres` (one per process). */
  commands: string[];
  /**
   * `pssBytes` by kind of process: `node`, and an embedded PostgreSQL's
   * `postgres` (postmaster), `postgres backend` (client sessions) and its
   * auxiliaries by their process titles (`postgres checkpointer`, …).
   */
  pssByKind: Record<string, number>;
}

/**
 * A process's kind: its command, or for a PostgreSQL child its title reduced
 * (`postgres: checkpointer` → `postgres checkpointer`; a client session,
 * `postgres: user db [local] idle`, → `postgres backend`: the embedded
 * PostgreSQL takes Unix-socket sessions only).
 */
export function processKind(command: string, cmdline: string): string {
  if (command !== 'postgres' || !cmdline.startsWith('postgres: ')) return command;
  const title = cmdline.slice('postgres: '.length);
  return title.includes('[local]') ? 'postgres backend' : `postgres ${title.split(' ')[0] ?? ''}`;
}

function pss(smapsRollup: string): number {
  const m = /^Pss:\s+(\d+)\s+kB/m.exec(smapsRollup);
  return m ? Number(m[1]) * 1024 : 0;
}

function read(path: string): string {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    // The process ended since the walk: it holds nothing any more.
    return '';
  }
}

/** RSS (procTreeStats) and PSS of `pid` and all its descendants, read from /proc. */
export function treeMemory(pid: number): TreeMemory {
  const { pids, rssBytes } = procTreeStats(pid);
  let pssBytes = 0;
  const commands: string[] = [];
  const pssByKind: Record<string, number> = {};
  for (const p of pids) {
    const bytes = pss(read(`/proc/${p}/smaps_rollup`));
    const command = read(`/proc/${p}/comm`).trim();
    pssBytes += bytes;
    commands.push(command);
    const kind = processKind(command, read(`/proc/${p}/cmdline`).replaceAll('\0', ' ').trim());
    pssByKind[kind] = (pssByKind[kind] ?? 0) + bytes;
  }
  return { rssBytes, pssBytes, processes: pids.length, commands, pssByKind };
}
