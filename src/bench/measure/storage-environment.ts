import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { postgresBinaries } from '../../server/db/embedded/postgres-binaries.js';

/** Where the storage scenario's data lives and what it runs: recorded with its results. */
export interface StorageEnvironment {
  tmpdir: string;
  /** The mount holding tmpdir, as /proc/mounts says: `device on mountpoint type fs (options)`. */
  filesystem: string;
  pgliteVersion: string;
  postgresVersion: string;
}

function mountOf(path: string): string {
  try {
    let best: string[] | undefined;
    for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) {
      const f = line.split(' ');
      const at = f[1];
      if (at === undefined) continue;
      const covers = at === '/' || path === at || path.startsWith(`${at}/`);
      if (covers && at.length >= (best?.[1]?.length ?? 0)) best = f;
    }
    return best ? `${best[0]} on ${best[1]} type ${best[2]} (${best[3]})` : 'unknown';
  } catch {
    return 'unknown (no /proc/mounts)';
  }
}

function pgliteVersion(): string {
  try {
    const file = fileURLToPath(new URL('../../../node_modules/@electric-sql/pglite/package.json', import.meta.url));
    return `@electric-sql/pglite ${(JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version ?? '?'}`;
  } catch {
    return '@electric-sql/pglite (version unknown)';
  }
}

async function postgresVersion(): Promise<string> {
  try {
    const bin = await postgresBinaries();
    const r = spawnSync(bin.postgres, ['--version'], { encoding: 'utf8' });
    return r.status === 0 ? r.stdout.trim() : `unknown (postgres --version: ${r.stderr.trim().slice(0, 200)})`;
  } catch (err) {
    return `unavailable: ${err instanceof Error ? err.message : String(err)}`;
  }
}

export async function storageEnvironment(): Promise<StorageEnvironment> {
  const dir = tmpdir();
  return { tmpdir: dir, filesystem: mountOf(dir), pgliteVersion: pgliteVersion(), postgresVersion: await postgresVersion() };
}
