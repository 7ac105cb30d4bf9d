import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/** Pids of the embedded PostgreSQL postmaster running on `dataDir` (none when pgrep finds nothing). */
export function postgresPids(dataDir: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', `postgres -D ${join(dataDir, 'postgres')}`], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch (err) {
    // pgrep exits 1 when nothing matches; anything else is a real failure.
    if ((err as { status?: unknown }).status === 1) return [];
    throw err;
  }
}
