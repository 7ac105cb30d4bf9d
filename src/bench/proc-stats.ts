import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

/** CPU time and resident memory of a process and all its descendants, from /proc. */
export interface ProcStats {
  cpuSeconds: number;
  rssBytes: number;
  pids: number[];
  /** Those of `pids` running this Node.js binary (the server and its workers, not an embedded PostgreSQL). */
  nodePids: number[];
  /** CPU of `nodePids` alone: the rest of `cpuSeconds` is an embedded PostgreSQL's. */
  nodeCpuSeconds: number;
  /**
   * CPU of the tree's children that exited and were waited for (cutime +
   * cstime): a PostgreSQL backend that ends between two samples moves its
   * time here, so `cpuSeconds + reapedCpuSeconds` loses none of it.
   */
  reapedCpuSeconds: number;
}

let ticks: number | undefined;

/** Clock ticks per second (USER_HZ) of /proc/<pid>/stat and /proc/stat. */
export function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

interface Stat {
  ppid: number;
  cpuTicks: number;
  reapedTicks: number;
}

function readStat(pid: number, tid?: number): Stat | undefined {
  let text: string;
  try {
    text = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'latin1');
  } catch {
    return undefined;
  }
  // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state); ppid is field 4, utime 14, stime 15, cutime 16, cstime 17.
  return { ppid: Number(rest[1]), cpuTicks: Number(rest[11]) + Number(rest[12]), reapedTicks: Number(rest[13]) + Number(rest[14]) };
}

/**
 * CPU seconds (user + system) of one process, all its threads, or of one of
 * its threads (`tid`): undefined once it is gone. Resolution: one clock tick.
 */
export function cpuSecondsOf(pid: number, tid?: number): number | undefined {
  const st = readStat(pid, tid);
  return st === undefined ? undefined : st.cpuTicks / clockTicks();
}

function readRss(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'latin1'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

function runsNode(pid: number): boolean {
  try {
    return readlinkSync(`/proc/${pid}/exe`) === process.execPath;
  } catch {
    // Gone since the walk, or not ours to read: not a server process to signal.
    return false;
  }
}

function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    const st = readStat(pid);
    if (!st) continue;
    const list = children.get(st.ppid);
    if (list) list.push(pid);
    else children.set(st.ppid, [pid]);
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift();
    if (pid === undefined) break;
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** Sums CPU (user + system) and RSS over `pid` and its descendants. Resolution: one clock tick (usually 10 ms). */
export function procTreeStats(pid: number): ProcStats {
  const pids = descendants(pid);
  const nodePids: number[] = [];
  let cpuTicks = 0;
  let nodeCpuTicks = 0;
  let reapedTicks = 0;
  let rssBytes = 0;
  for (const p of pids) {
    const st = readStat(p);
    const ticks = st?.cpuTicks ?? 0;
    cpuTicks += ticks;
    reapedTicks += st?.reapedTicks ?? 0;
    if (runsNode(p)) {
      nodePids.push(p);
      nodeCpuTicks += ticks;
    }
    rssBytes += readRss(p);
  }
  const hz = clockTicks();
  return { cpuSeconds: cpuTicks / hz, rssBytes, pids, nodePids, nodeCpuSeconds: nodeCpuTicks / hz, reapedCpuSeconds: reapedTicks / hz };
}
