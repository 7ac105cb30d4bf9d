import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onCleanup } from '../children.js';
import { log } from '../log.js';

/** A throwaway data directory; `dispose` also ends any process left running on it. */
export interface BenchDataDir {
  /** The directory to open (`<temp>/data`, created by whoever opens it); files next to it go away with it. */
  readonly path: string;
  dispose(): void;
}

/**
 * The embedded PostgreSQL (and initdb before it) runs in a session of its
 * own (detached), so killing the server or probe that started it leaves it
 * running: end every process whose command line names this directory
 * (`postgres -D <root>/data/postgres`, `initdb -D <root>/data/postgres.init`).
 */
function killLeftProcesses(root: string): void {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8');
    } catch {
      // Ended since the listing.
      continue;
    }
    if (!cmdline.split('\0').some((arg) => arg === root || arg.startsWith(`${root}/`))) continue;
    const pid = Number(name);
    log.warn({ pid, cmdline: cmdline.replaceAll('\0', ' ').trim() }, 'process still running on a bench data directory: killing it');
    try {
      // A detached postmaster leads its own process group: its auxiliary processes and backends go with it.
      process.kill(-pid, 'SIGKILL');
    } catch {
      try {
        // Not a group leader (ESRCH for the group): the process alone.
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone meanwhile.
      }
    }
  }
}

/**
 * Makes `<tmpdir>/fleetplane-bench-<label>-XXXXXX/data`; removed, and
 * whatever still runs on it ended, by `dispose` or at harness exit.
 */
export function benchDataDir(label: string): BenchDataDir {
  const root = mkdtempSync(join(tmpdir(), `fleetplane-bench-${label}-`));
  // A root harness without user namespaces runs PostgreSQL as nobody, who must pass through to its cluster (run-as.ts).
  chmodSync(root, 0o711);
  const dispose = (): void => {
    unregister();
    killLeftProcesses(root);
    rmSync(root, { recursive: true, force: true });
  };
  const unregister = onCleanup(dispose);
  return { path: join(root, 'data'), dispose };
}
