import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from './process-alive.js';

const LOCK_FILE = 'server.pid';

/** Another live server holds the data directory. */
export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(`data directory ${dataDir} is in use by another fleetplane server (pid ${pid})`);
    this.name = 'DataDirInUseError';
  }
}

/** Held while a server (or a `--workers` primary) owns a data directory. */
export interface DataDirLock {
  /** True when the previous owner died without releasing it (its PostgreSQL may still run). */
  readonly stale: boolean;
  release(): void;
}

/**
 * Takes the data directory for this process: one server per directory.
 * A lock whose process is gone is taken over; a live one refuses at once
 * with DataDirInUseError. Two servers racing for a stale lock can't both
 * win: the exclusive create decides, and PostgreSQL's own postmaster.pid
 * guards the database files behind it.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const file = join(dataDir, LOCK_FILE);
  let stale = false;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      return {
        stale,
        release() {
          try {
            if (readFileSync(file, 'utf8').trim() === String(process.pid)) unlinkSync(file);
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
          }
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
    if (Number.isInteger(holder) && holder > 0 && (holder === process.pid || processAlive(holder, 'node'))) {
      throw new DataDirInUseError(dataDir, holder);
    }
    stale = true;
    try {
      unlinkSync(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  throw new DataDirInUseError(dataDir, Number.parseInt(readFileSync(file, 'utf8').trim(), 10));
}
