import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import postgres from 'postgres';
import { socketAware } from '../postgres.js';
import { postgresBinaries } from './postgres-binaries.js';
import { decideRunAs, type RunAs } from './run-as.js';
import { lockDataDir } from './data-dir-lock.js';
import { processAlive } from './process-alive.js';
import { sleep } from '../../../util/sleep.js';
import { postgresLogSink } from './postgres-log.js';

/** The cluster lives in `<data dir>/postgres`; the server uses its `postgres` database as role `fleetplane`. */
const CLUSTER_DIR = 'postgres';
const NAME = 'fleetplane';
const PORT = 5432;
/** sun_path is 108 bytes on Linux, 104 on macOS. */
const SOCKET_PATH_MAX = 100;
/** Each server process pools 10 connections plus its LISTEN session: room for --workers well past the cores of one machine. */
const MAX_CONNECTIONS = 200;
const READY_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 60_000;

/** A PostgreSQL server this process started for its data directory. */
export interface EmbeddedPostgres {
  /** libpq-style URL: `postgres://fleetplane@localhost/postgres?host=<socket directory>`. */
  readonly url: string;
  readonly dataDir: string;
  readonly runAs: RunAs['kind'];
  /** Settles when PostgreSQL exits; `expected` is false when it died on its own. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; expected: boolean }>;
  /** Fast shutdown (SIGINT): open transactions are rolled back, everything committed is on disk. */
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  logger: Logger;
  /**
   * Whether a root server may run PostgreSQL in a user namespace (default:
   * when the system allows one); false goes straight to the `nobody` fallback.
   */
  namespaces?: boolean;
}

function socketDir(clusterDir: string): string {
  if (join(clusterDir, `.s.PGSQL.${PORT}`).length <= SOCKET_PATH_MAX) return clusterDir;
  const id = createHash('sha256').update(clusterDir).digest('hex').slice(0, 16);
  return join(tmpdir(), `fleetplane-pg-${id}`);
}

/**
 * glibc raises its mmap threshold to the size of each large block freed (up
 * to 32 MiB) and from then on serves such blocks from its heap, which it
 * rarely gives back: every pooled backend that once ran a large status batch
 * (10,000 rows) kept that working memory for good. A fixed threshold keeps
 * blocks of 32 KiB and more in their own mappings, returned when the query's
 * memory is released. With 10,000 agents on `--workers 2` the backends grew
 * by 25 MiB instead of 57 MiB. Read by glibc only.
 */
const MALLOC_ENV = { MALLOC_MMAP_THRESHOLD_: String(32 * 1024) };

function run(argv: readonly string[], runAs: RunAs): ChildProcess {
  const [file, ...args] = runAs.kind === 'namespace' ? [...runAs.wrapper, ...argv] : argv;
  if (file === undefined) throw new Error('nothing to run');
  const ids = runAs.kind === 'user' ? { uid: runAs.uid, gid: runAs.gid } : {};
  // LC_ALL=C: PostgreSQL's messages and the cluster's collation don't depend on the host's locale.
  // Detached: a terminal's Ctrl-C reaches the whole foreground group, and PostgreSQL must outlive the
  // server's drain (its last status batch); the server stops it last.
  return spawn(file, args, { ...ids, detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_ALL: 'C', TZ: 'UTC', ...MALLOC_ENV } });
}

function finished(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolveExit, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolveExit({ code, signal }));
  });
}

/** Ends a PostgreSQL left running by a server that died (kill -9) before reusing its cluster. */
async function stopOrphan(clusterDir: string, logger: Logger): Promise<void> {
  const pidFile = join(clusterDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number.parseInt(readFileSync(pidFile, 'utf8').split('\n')[0] ?? '', 10);
  if (!Number.isInteger(pid) || pid <= 0 || !processAlive(pid, 'postgres')) return;
  logger.warn({ pid }, 'embedded PostgreSQL left running by a previous server; stopping it');
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (processAlive(pid, 'postgres')) {
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGQUIT');
      throw new Error(`embedded PostgreSQL ${pid} from a previous server did not stop within ${STOP_TIMEOUT_MS / 1000} s`);
    }
    await sleep(50);
  }
}

async function initCluster(clusterDir: string, initdb: string, runAs: RunAs, logger: Logger): Promise<void> {
  // initdb writes into a scratch directory renamed into place at the end, so a crash
  // during the first start never leaves a half-made cluster behind.
  const scratch = `${clusterDir}.init`;
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { mode: 0o700 });
  if (runAs.kind === 'user') chownSync(scratch, runAs.uid, runAs.gid);
  const started = Date.now();
  const child = run([initdb, '-D', scratch, '-U', NAME, '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-instructions'], runAs);
  const stderr: string[] = [];
  child.stderr?.setEncoding('utf8').on('data', (s: string) => {
    if (stderr.length < 64) stderr.push(s);
  });
  const { code, signal } = await finished(child);
  if (code !== 0) throw new Error(`initdb failed (${signal ?? `exit ${code}`}): ${stderr.join('').trim()}`);
  renameSync(scratch, clusterDir);
  logger.info({ dir: clusterDir, ms: Date.now() - started }, 'embedded PostgreSQL cluster created');
}

async function waitReady(url: string, child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let gone = false;
  void exited.then(() => (gone = true));
  const target = socketAware(url);
  for (;;) {
    const sql = postgres(target.url, { host: target.host, max: 1, connect_timeout: 5, onnotice: () => undefined });
    try {
      await sql`select 1`;
      return;
    } catch (err) {
      if (gone) throw new Error(`embedded PostgreSQL exited during start (pid ${child.pid ?? '?'})`, { cause: err });
      if (Date.now() > deadline) throw new Error(`embedded PostgreSQL not ready within ${READY_TIMEOUT_MS / 1000} s`, { cause: err });
    } finally {
      await sql.end({ timeout: 1 });
    }
    await sleep(25);
  }
}

/**
 * Starts (creating it on first use) the PostgreSQL cluster of a data
 * directory, holding the directory's lock until `stop()`: a second server
 * on the same directory fails at once with DataDirInUseError. PostgreSQL
 * listens only on a Unix socket whose directory only this user may enter,
 * with fsync and synchronous commit on: a write is acknowledged once its
 * commit record is on disk.
 */
export async function startEmbeddedPostgres(o: EmbeddedOptions): Promise<EmbeddedPostgres> {
  const dataDir = resolve(o.dataDir);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const lock = lockDataDir(dataDir);
  try {
    const logger = o.logger.child({ component: 'embedded-postgres' });
    const clusterDir = join(dataDir, CLUSTER_DIR);
    const sockets = socketDir(clusterDir);
    const bin = await postgresBinaries();
    // The data directory itself is ours to open up (below); what lies above it is not.
    const mustReach = [dirname(bin.postgres), dirname(dataDir), ...(sockets === clusterDir ? [] : [dirname(sockets)])];
    const runAs = decideRunAs(mustReach, o.namespaces === undefined ? {} : { namespaces: o.namespaces });
    // `nobody` must pass through the data directory to its cluster; listing it stays the owner's.
    if (runAs.kind === 'user') chmodSync(dataDir, 0o711);
    if (lock.stale) await stopOrphan(clusterDir, logger);
    if (!existsSync(join(clusterDir, 'PG_VERSION'))) await initCluster(clusterDir, bin.initdb, runAs, logger);
    mkdirSync(sockets, { recursive: true, mode: 0o700 });
    if (runAs.kind === 'user') chownSync(sockets, runAs.uid, runAs.gid);
    const child = run(
      [
        bin.postgres,
        '-D', clusterDir,
        '-p', String(PORT),
        '-c', 'listen_addresses=',
        '-c', `unix_socket_directories=${sockets}`,
        '-c', 'unix_socket_permissions=0700',
        '-c', `max_connections=${MAX_CONNECTIONS}`,
        // Durability is the point of this engine: never let a config file turn it off.
        '-c', 'fsync=on',
        '-c', 'synchronous_commit=on',
        '-c', 'full_page_writes=on',
        '-c', 'lc_messages=C',
        '-c', 'log_min_error_statement=panic',
      ],
      runAs,
    );
    let stopping = false;
    // A server that exits without stop() (process.exit, an uncaught error) must not leave PostgreSQL
    // running; after kill -9 nothing runs here, and the next start stops the orphan instead.
    const onProcessExit = (): void => {
      if (!stopping) child.kill('SIGINT');
    };
    process.on('exit', onProcessExit);
    const exitedRaw = finished(child);
    const exited = exitedRaw.then((r) => ({ ...r, expected: stopping }));
    child.stderr?.pipe(postgresLogSink(logger));
    const url = `postgres://${NAME}@localhost/postgres?host=${encodeURIComponent(sockets)}`;
    const started = Date.now();
    try {
      await waitReady(url, child, exitedRaw);
    } catch (err) {
      stopping = true;
      process.off('exit', onProcessExit);
      child.kill('SIGQUIT');
      throw err;
    }
    logger.info({ pid: child.pid, runAs: runAs.kind, ms: Date.now() - started }, 'embedded PostgreSQL ready');
    void exited.then(({ code, signal, expected }) => {
      if (!expected) logger.error({ code, signal }, 'embedded PostgreSQL exited on its own');
    });
    return {
      url,
      dataDir,
      runAs: runAs.kind,
      exited,
      async stop() {
        if (!stopping) {
          stopping = true;
          child.kill('SIGINT');
        }
        const timer = setTimeout(() => child.kill('SIGQUIT'), STOP_TIMEOUT_MS);
        try {
          await exited;
        } finally {
          clearTimeout(timer);
          process.off('exit', onProcessExit);
          if (sockets !== clusterDir) rmSync(sockets, { recursive: true, force: true });
          lock.release();
        }
      },
    };
  } catch (err) {
    lock.release();
    throw err;
  }
}
