import { readFileSync } from 'node:fs';

/**
 * How many descriptors this process may hold open: the soft `RLIMIT_NOFILE`
 * (Node raises it to the hard limit at start), read from `/proc/self/limits`.
 * Undefined where that file doesn't exist (not Linux), can't be read, or says
 * unlimited.
 */
export function openFilesLimit(path = '/proc/self/limits'): number | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  const soft = /^Max open files\s+(\S+)/m.exec(text)?.[1];
  const n = Number(soft);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}
