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
  for (const p of pids) {
    pssBytes += pss(read(`/proc/${p}/smaps_rollup`));
    commands.push(read(`/proc/${p}/comm`).trim());
  }
  return { rssBytes, pssBytes, processes: pids.length, commands };
}
