import { readFileSync } from 'node:fs';

/**
 * What the kernel says about TCP memory and this process's limits (Linux
 * /proc). TCP memory is counted in pages for the whole kernel, every
 * process's sockets together; past `tcp_mem`'s middle value the kernel is
 * under memory pressure and starts refusing to grow socket buffers.
 */

/** Pages of TCP socket memory allocated now (`/proc/net/sockstat`, "TCP: ... mem N"). */
export function tcpMemPages(): number {
  const m = /^TCP:.*\smem (\d+)/m.exec(readFileSync('/proc/net/sockstat', 'utf8'));
  if (!m?.[1]) throw new Error('/proc/net/sockstat has no "TCP: ... mem N" line');
  return Number(m[1]);
}

/** The kernel's TCP memory thresholds in pages: [low, pressure, high] (`/proc/sys/net/ipv4/tcp_mem`). */
export function tcpMemThresholds(): { low: number; pressure: number; high: number } {
  const [low, pressure, high] = readFileSync('/proc/sys/net/ipv4/tcp_mem', 'utf8').trim().split(/\s+/).map(Number);
  if (low === undefined || pressure === undefined || high === undefined || [low, pressure, high].some((n) => !Number.isFinite(n))) {
    throw new Error('/proc/sys/net/ipv4/tcp_mem is not three numbers');
  }
  return { low, pressure, high };
}

/** Whether this machine exposes the figures above (Linux with /proc). */
export function hasKernelTcpFigures(): boolean {
  try {
    tcpMemPages();
    tcpMemThresholds();
    return true;
  } catch {
    return false;
  }
}

/** The soft limit on open files of a process (`ulimit -n`), from /proc/<pid>/limits. */
export function openFilesLimit(pid: number | 'self' = 'self'): number {
  const m = /^Max open files\s+(\S+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
  if (!m?.[1]) throw new Error(`/proc/${pid}/limits has no "Max open files" line`);
  return m[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(m[1]);
}

/** Resident memory of a process in bytes (VmRSS of /proc/<pid>/status). */
export function rssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m?.[1]) throw new Error(`/proc/${pid}/status has no VmRSS line`);
  return Number(m[1]) * 1024;
}
