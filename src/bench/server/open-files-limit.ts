import { openFilesLimit as processLimit } from '../../util/open-files-limit.js';

/** Used when /proc can't be read (the limit NOTES.md gives for these machines). */
const FALLBACK = 20_000;

/**
 * The soft "Max open files" of this process (`ulimit -n`), which the server
 * processes the harness starts inherit: one process can't hold more sockets.
 */
export function openFilesLimit(): number {
  return processLimit() ?? FALLBACK;
}
