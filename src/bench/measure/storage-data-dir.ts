import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onCleanup } from '../children.js';
import { log } from '../log.js';

/** A throwaway data directory for one engine's probes; `dispose` also ends any process left running on it. */
export interface StorageDataDir {
  /** The directory the probes open (`<temp>/data`). */
  readonly path: string;
  dispose(): void;
}

function groupLeader(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // Fields after the command name: state, ppid, pgrp.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) === pid;
  } catch {
    return false;
  }
}

/**
 * The embedded PostgreSQL (and initdb before it) runs in a session of its
 * own (detached), so killing a probe leaves it running: end every process
 * whose command line names this run's unique temporary directory
 * (`postgres -D <root>/data/postgres`, `initdb -D <root>/data/postgres.init`).
 */
function killLeftProcesses(root: string): void {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (!cmdline.split('\0').some((arg) => arg === root || arg.startsWith(`${root}/`))) continue;
    log.warn({ pid: Number(name), cmdline: cmdline.replaceAll('\0', ' ').trim() }, 'process of a storage probe still running: killing it');
    const pid = Number(name);
    try {
      // A detached postmaster leads its own process group: its auxiliary processes and backends go with it.
      process.kill(groupLeader(pid) ? -pid : pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
  }
}

/** Makes `<tmpdir>/fleetplane-storage-<engine>-XXXXXX`; removed (and whatever still runs on it ended) by dispose or at harness exit. */
export function storageDataDir(engine: string): StorageDataDir {
  const root = mkdtempSync(join(tmpdir(), `fleetplane-storage-${engine}-`));
  const path = join(root, 'data');
  let disposed = false;
  const dispose = (): void => {
    if (disposed) return;
    disposed = true;
    unregister();
    killLeftProcesses(root);
    rmSync(root, { recursive: true, force: true });
  };
  const unregister = onCleanup(dispose);
  return { path, dispose };
}
