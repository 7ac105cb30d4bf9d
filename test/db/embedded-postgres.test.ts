import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { openPostgres, startEmbeddedPostgres, DataDirInUseError, CannotRunAsRootError, type EmbeddedPostgres } from '../../src/server/db/index.js';
import { decideRunAs } from '../../src/server/db/embedded/run-as.js';
import { postgresPids } from '../support/embedded-postgres-pids.js';

const logger = pino({ level: 'silent' });
/** initdb on a busy 2-core machine; this bounds a hang, not speed. */
const START_TIMEOUT = 120_000;
const isRoot = typeof process.geteuid === 'function' && process.geteuid() === 0;
const nobodyUid = (): number => Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).trim());

const dirs: string[] = [];
const running: EmbeddedPostgres[] = [];
afterEach(async () => {
  for (const pg of running.splice(0)) await pg.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function freshDir(parent = tmpdir()): string {
  const d = mkdtempSync(join(parent, 'fp-embedded-'));
  dirs.push(d);
  return d;
}

async function start(dataDir: string, namespaces?: boolean): Promise<EmbeddedPostgres> {
  const pg = await startEmbeddedPostgres({ dataDir, logger, ...(namespaces === undefined ? {} : { namespaces }) });
  running.push(pg);
  return pg;
}

async function stop(pg: EmbeddedPostgres): Promise<void> {
  await pg.stop();
  running.splice(running.indexOf(pg), 1);
}

/** Runs one statement on its own connection. */
async function query<R extends Record<string, unknown>>(url: string, text: string): Promise<R[]> {
  const db = await openPostgres(url, { max: 1 });
  try {
    return await db.query<R>(text);
  } finally {
    await db.close();
  }
}

describe('embedded PostgreSQL', () => {
  it(
    'commits durably: fsync, synchronous commit and full-page writes are on, whatever a config file says',
    async () => {
      const dir = freshDir();
      const pg = await start(dir);
      await query(pg.url, `ALTER SYSTEM SET fsync = off`);
      await query(pg.url, `ALTER SYSTEM SET synchronous_commit = off`);
      await stop(pg);
      // postgresql.auto.conf now turns durability off; the server's own start flags must win.
      const again = await start(dir);
      const settings = `SELECT current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sc, current_setting('full_page_writes') AS fpw`;
      expect(await query(again.url, settings)).toEqual([{ fsync: 'on', sc: 'on', fpw: 'on' }]);
    },
    START_TIMEOUT,
  );

  it(
    // What that saves (a backend's memory after a 10,000-row batch) is measured by `npm run bench -- fleet`.
    'starts PostgreSQL with a fixed glibc mmap threshold (MALLOC_MMAP_THRESHOLD_), not glibc\'s sliding one',
    async () => {
      const dir = freshDir();
      await start(dir);
      const [pid] = postgresPids(dir);
      expect(pid).toBeDefined();
      const environ = readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0');
      expect(environ).toContain(`MALLOC_MMAP_THRESHOLD_=${32 * 1024}`);
    },
    START_TIMEOUT,
  );

  it(
    'keeps one server per data directory: a second start on it refuses at once, and after stop() it can start again',
    async () => {
      const dir = freshDir();
      const first = await start(dir);
      await expect(startEmbeddedPostgres({ dataDir: dir, logger })).rejects.toBeInstanceOf(DataDirInUseError);
      await expect(startEmbeddedPostgres({ dataDir: dir, logger })).rejects.toThrow(/^data directory .* is in use by another fleetplane server \(pid \d+\)$/);
      // The refused start left the first one's lock in place.
      await expect(startEmbeddedPostgres({ dataDir: dir, logger })).rejects.toBeInstanceOf(DataDirInUseError);
      await stop(first);
      expect(postgresPids(dir)).toEqual([]);
      const second = await start(dir);
      expect(await query(second.url, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
    },
    START_TIMEOUT,
  );

  it(
    'listens on no TCP port, only on a Unix socket in a directory only its owner may enter',
    async () => {
      const pg = await start(freshDir());
      const url = new URL(pg.url);
      const socketDir = url.searchParams.get('host') ?? '';
      expect(socketDir.startsWith('/')).toBe(true);
      expect(statSync(socketDir).mode & 0o077).toBe(0);
      expect(await query(pg.url, `SELECT current_setting('listen_addresses') AS listen`)).toEqual([{ listen: '' }]);
    },
    START_TIMEOUT,
  );

  it(
    'uses a socket directory outside the data directory when the data directory path is too long for a socket',
    async () => {
      let deep = freshDir();
      while (deep.length < 120) {
        deep = join(deep, 'a-rather-long-directory-name');
        mkdirSync(deep);
      }
      const pg = await start(deep);
      const socketDir = new URL(pg.url).searchParams.get('host') ?? '';
      expect(socketDir.startsWith(deep)).toBe(false);
      expect(await query(pg.url, 'SELECT 2 AS two')).toEqual([{ two: 2 }]);
      await stop(pg);
      expect(() => statSync(socketDir)).toThrow();
    },
    START_TIMEOUT,
  );
});

describe.runIf(isRoot)('embedded PostgreSQL started by root (PostgreSQL itself refuses to run as root)', () => {
  it(
    'runs it in a user namespace when the system allows one, even in a directory only root may enter',
    async () => {
      const closed = freshDir();
      const pg = await start(join(closed, 'data'));
      expect(pg.runAs).toBe('namespace');
      expect(statSync(join(closed, 'data', 'postgres')).uid).toBe(0);
    },
    START_TIMEOUT,
  );

  it(
    'falls back to nobody without namespaces, and refuses with a clear error where nobody can\'t reach the data',
    async () => {
      const open = freshDir();
      chmodSync(open, 0o755);
      const pg = await start(join(open, 'data'), false);
      expect(pg.runAs).toBe('user');
      // The cluster's files are nobody's: PostgreSQL runs as nobody.
      expect(statSync(join(open, 'data', 'postgres')).uid).toBe(nobodyUid());
      expect(await query(pg.url, 'SELECT current_user AS user')).toEqual([{ user: 'fleetplane' }]);

      const closed = freshDir();
      chmodSync(closed, 0o700);
      expect(() => decideRunAs([join(closed, 'data')], { namespaces: false })).toThrow(CannotRunAsRootError);
      await expect(startEmbeddedPostgres({ dataDir: join(closed, 'data'), logger, namespaces: false })).rejects.toThrow(/nobody can't reach/);
    },
    START_TIMEOUT,
  );
});
