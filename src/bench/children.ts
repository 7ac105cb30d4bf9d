import type { ChildProcess } from 'node:child_process';

/**
 * Every process the harness starts, so that all of them are ended when the
 * harness exits, however it exits (normal end, error, SIGINT/SIGTERM).
 * Cleanups (e.g. stopping a PostgreSQL cluster) must be synchronous: they
 * also run from the `exit` event.
 */
const processes = new Set<ChildProcess>();
/** Process groups (detached children whose descendants must die with them). */
const groups = new Set<number>();
const cleanups = new Set<() => void>();
let installed = false;

export function track(child: ChildProcess, opts: { group?: boolean } = {}): void {
  installHandlers();
  processes.add(child);
  const pid = child.pid;
  if (opts.group && pid !== undefined) groups.add(pid);
  child.once('exit', () => {
    processes.delete(child);
    if (pid !== undefined) groups.delete(pid);
  });
}

/** Signals the process group a detached child leads (a no-op once it is gone). */
export function killGroup(child: ChildProcess, sig: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, sig);
  } catch {
    // The group is already gone: nothing left to signal.
  }
}

/** Registers a synchronous cleanup; returns a function that unregisters it. */
export function onCleanup(fn: () => void): () => void {
  installHandlers();
  cleanups.add(fn);
  return () => cleanups.delete(fn);
}

/** Kills every tracked process (SIGKILL) and runs the cleanups; idempotent. */
export function killAll(): void {
  for (const pid of groups) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // The group is already gone: nothing left to end.
    }
  }
  groups.clear();
  for (const child of processes) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  processes.clear();
  for (const fn of [...cleanups]) {
    cleanups.delete(fn);
    try {
      fn();
    } catch (err) {
      process.stderr.write(`bench: cleanup failed: ${err instanceof Error ? err.message : String(err)}\n`);
    }
  }
}

function installHandlers(): void {
  if (installed) return;
  installed = true;
  process.on('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      process.stderr.write(`bench: ${sig}: stopping every child process\n`);
      killAll();
      process.exit(130);
    });
  }
}
