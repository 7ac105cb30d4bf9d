import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * How the PostgreSQL processes are started. PostgreSQL refuses to run as
 * root, so a root server runs them either in a user namespace where root
 * is mapped to an ordinary user (files stay root's, any path root reaches
 * works), or as `nobody` when namespaces are unavailable (containers
 * often forbid them) and `nobody` can reach every path involved.
 */
export type RunAs =
  | { readonly kind: 'self' }
  | { readonly kind: 'namespace'; readonly wrapper: readonly string[] }
  | { readonly kind: 'user'; readonly name: string; readonly uid: number; readonly gid: number };

/** Root, and neither way of running PostgreSQL as someone else works here. */
export class CannotRunAsRootError extends Error {
  constructor(unreachable: string, cause?: unknown) {
    super(
      'PostgreSQL does not run as root, this system allows no user namespace, and user nobody ' +
        `can't reach ${unreachable}; run fleetplane as an ordinary user, use --data-dir under a directory ` +
        'others may enter, or --database-url',
      cause === undefined ? undefined : { cause },
    );
    this.name = 'CannotRunAsRootError';
  }
}

const MAPPED_ID = '1';
const NOBODY_ID = 65534;

function namespaceWorks(): boolean {
  const probe = spawnSync('unshare', ['--user', `--map-user=${MAPPED_ID}`, `--map-group=${MAPPED_ID}`, 'true'], {
    stdio: 'ignore',
    timeout: 10_000,
  });
  return probe.status === 0;
}

function nobody(): { uid: number; gid: number } {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const f = line.split(':');
      if (f[0] === 'nobody' && f.length > 3) return { uid: Number(f[2]), gid: Number(f[3]) };
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  return { uid: NOBODY_ID, gid: NOBODY_ID };
}

/** Whether uid/gid may enter every directory on the way to `path` (and `path` itself when it exists). */
function reachable(path: string, uid: number, gid: number): boolean {
  let dir = resolve(path);
  for (;;) {
    try {
      const st = statSync(dir);
      const bits = st.uid === uid ? (st.mode >> 6) & 7 : st.gid === gid ? (st.mode >> 3) & 7 : st.mode & 7;
      if ((bits & 1) === 0) return false;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const parent = dirname(dir);
    if (parent === dir) return true;
    dir = parent;
  }
}

/**
 * Decides how to start PostgreSQL for a server running as this process's
 * user, given the paths PostgreSQL must reach (binaries, data, socket).
 */
export function decideRunAs(paths: readonly string[], opts: { namespaces?: boolean } = {}): RunAs {
  if (typeof process.geteuid !== 'function' || process.geteuid() !== 0) return { kind: 'self' };
  if (opts.namespaces !== false && namespaceWorks()) {
    return { kind: 'namespace', wrapper: ['unshare', '--user', `--map-user=${MAPPED_ID}`, `--map-group=${MAPPED_ID}`] };
  }
  const { uid, gid } = nobody();
  const blocked = paths.find((p) => !reachable(p, uid, gid));
  if (blocked !== undefined) throw new CannotRunAsRootError(blocked);
  return { kind: 'user', name: 'nobody', uid, gid };
}
