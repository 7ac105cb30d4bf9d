import { readFileSync } from 'node:fs';

/**
 * Whether `pid` is a live process whose command line mentions `program`.
 * The name check keeps a pid reused after a reboot (by anything else)
 * from passing for the old owner; where /proc is missing, liveness alone decides.
 */
export function processAlive(pid: number, program: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(program);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && process.platform !== 'linux') return true;
    return false;
  }
}
