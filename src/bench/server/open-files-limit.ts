import { readFileSync } from 'node:fs';

/** Used when /proc can't be read (the limit NOTES.md gives for these machines). */
const FALLBACK = 20_000;

/**
 * The soft "Max open files" of this process (`ulimit -n`), which the server
 * processes the harness starts inherit: one process can't hold more sockets.
 */
export function openFilesLimit(): number {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'latin1'));
    return m?.[1] ? Number(m[1]) : FALLBACK;
  } catch {
    return FALLBACK;
  }
}
