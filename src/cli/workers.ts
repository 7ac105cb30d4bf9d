import cluster, { type Worker } from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { migrate, openPostgres, startEmbeddedPostgres, type EmbeddedPostgres } from '../server/db/index.js';
import { resolveAdminToken } from '../server/store/index.js';
import { CLUSTER_REGISTRIES, EMBEDDED_POOL_SIZE, serveClusterAgentRegistry, serveClusterMetrics, type Settings } from '../server/index.js';
import { cliLogger } from './cli-logger.js';
import { fullJitterDelay } from '../util/backoff.js';

/** Message a worker sends the primary once it listens. */
export interface WorkerReady {
  type: 'fleetplane:listening';
  url: string;
}

export function isWorkerReady(m: unknown): m is WorkerReady {
  return typeof m === 'object' && m !== null && (m as { type?: unknown }).type === 'fleetplane:listening';
}

/**
 * A worker's life once its server listens: tells the primary, runs until
 * `stopped` settles, then leaves the cluster. Leaving matters: the IPC
 * channel to the primary keeps a worker's event loop alive, so a worker
 * whose server closed would never exit, and the primary would wait for it forever.
 */
export async function serveAsWorker(url: string, stopped: Promise<number>): Promise<number> {
  const ready: WorkerReady = { type: 'fleetplane:listening', url };
  process.send?.(ready);
  const code = await stopped;
  // A worker-initiated disconnect marks the exit as intended (no forced process.exit(0) on disconnect).
  if (process.connected) cluster.worker?.disconnect();
  return code;
}

/**
 * V8's young generation for a worker, in MiB per semi-space, as both its
 * least and its most (V8's default on 64-bit: 1 to 16, and 16 is about 33
 * MiB of committed new space). A worker holds thousands of connections whose
 * objects live long: the fleet bench found each worker's new space at 33.6
 * MiB, empty after a GC, which with 5,000 agents per worker is 6.7 KiB per
 * agent. With only a bound, V8 kept 1 MiB, and a change ACKed by 5,000
 * agents ran 31 scavenges per worker (`--trace-gc`), 115 ms of pauses: a
 * scavenge costs a few ms here whatever it frees, so their number is what
 * counts. A --min- or --max-semi-space-size given to the primary (argv or
 * NODE_OPTIONS) wins.
 */
export const WORKER_SEMI_SPACE_MB = 2;

/** The V8 flags a worker is started with: the primary's, and the worker's young-generation size unless one is set. */
export function workerExecArgv(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const set = [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].some((a) => /^--(max|min)[-_]semi[-_]space[-_]size(=|$)/.test(a));
  return set ? [...execArgv] : [...execArgv, `--min-semi-space-size=${WORKER_SEMI_SPACE_MB}`, `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`];
}

/**
 * What a worker needs to reach the primary's embedded PostgreSQL: its URL,
 * and the embedded pool size unless the operator chose one (a worker sees
 * the URL as --database-url's, whose default pool is larger).
 */
export function embeddedWorkerEnv(settings: Pick<Settings, 'dbPoolSize'>, embeddedUrl: string | undefined): Record<string, string> {
  if (embeddedUrl === undefined) return {};
  return { DATABASE_URL: embeddedUrl, ...(settings.dbPoolSize === undefined ? { FLEETPLANE_DB_POOL_SIZE: String(EMBEDDED_POOL_SIZE) } : {}) };
}

/**
 * Without Redis the workers find each other's agents through the primary
 * (serveClusterAgentRegistry) and forward requests to each other like
 * replicas do, over their private listeners. Unless --private-port is set,
 * each worker gets one on loopback (an ephemeral port) with a secret made
 * for this run: the workers are on one machine, and nothing else may call
 * them. With --redis-url the registry spans machines, so the private
 * listener is the operator's to configure.
 */
export function privateListenerEnv(settings: Pick<Settings, 'redisUrl' | 'privatePort' | 'privateSecret'>): Record<string, string> {
  if (settings.redisUrl || settings.privatePort !== undefined) return {};
  return {
    FLEETPLANE_PRIVATE_PORT: '0',
    FLEETPLANE_PRIVATE_HOST: '127.0.0.1',
    ...(settings.privateSecret ? {} : { FLEETPLANE_PRIVATE_SECRET: randomBytes(32).toString('base64url') }),
  };
}

const RESTART_BASE_MS = 500;
const RESTART_CAP_MS = 30_000;
/** Stopping the embedded PostgreSQL slower than this is logged as a warning. */
const SLOW_EMBEDDED_STOP_MS = 2_000;

/**
 * `--workers N`: the primary migrates and settles the admin token once, then
 * runs N server processes sharing the port (node:cluster). On the embedded
 * storage the primary runs the PostgreSQL and holds the data directory; the
 * workers reach it through its URL and stop before it does. A worker that dies
 * is restarted with jittered backoff; SIGTERM is passed to every worker and
 * the primary exits 0 when they have drained. SIGHUP is passed on too (each
 * worker reloads its TLS certificate).
 */
export async function runWorkers(settings: Settings, argv: readonly string[]): Promise<number> {
  const logger = cliLogger({ level: settings.logLevel, base: { service: 'fleetplane', role: 'primary' } });
  const embedded: EmbeddedPostgres | undefined = settings.databaseUrl ? undefined : await startEmbeddedPostgres({ dataDir: settings.dataDir, logger });
  const databaseUrl = settings.databaseUrl ?? embedded?.url ?? '';
  let token: string | undefined;
  try {
    const db = await openPostgres(databaseUrl, { max: 1 });
    try {
      await migrate(db);
      token = (await resolveAdminToken(db, { configured: settings.adminToken, dataDir: embedded ? settings.dataDir : undefined })).token;
    } finally {
      await db.close();
    }
  } catch (err) {
    await embedded?.stop();
    throw err;
  }

  cluster.setupPrimary({ args: ['serve', ...argv], execArgv: workerExecArgv(process.execArgv, process.env['NODE_OPTIONS']) });
  // Flags win over the environment, and the primary's argv has no --database-url on the embedded storage.
  const workerEnv: Record<string, string> = { ...embeddedWorkerEnv(settings, embedded?.url), ...privateListenerEnv(settings) };
  const stopMetrics = serveClusterMetrics(logger);
  // Without Redis the primary is the directory of its workers' agent tunnels and relay sessions.
  const stopAgents = settings.redisUrl ? () => undefined : serveClusterAgentRegistry(logger);
  const stopRelay = settings.redisUrl || !settings.relay ? () => undefined : serveClusterAgentRegistry(logger, CLUSTER_REGISTRIES.relay);
  const stopRegistry = (): void => {
    stopAgents();
    stopRelay();
  };
  let stopping = false;
  let printed = false;
  // The line says the server is listening: only once every worker takes connections, since the
  // primary hands new connections only to workers that listen and a client would otherwise see one.
  const listening = new Set<number>();
  let restarts = 0;
  // Counted here, not from cluster.workers: a worker leaves that map only once both its process
  // exited and its IPC channel closed, in either order, so it may still be there at 'exit'.
  const running = new Set<Worker>();
  const spawn = (): Worker => {
    const w = cluster.fork(workerEnv);
    running.add(w);
    w.on('message', (m: unknown) => {
      if (!isWorkerReady(m) || printed) return;
      listening.add(w.id);
      if (listening.size < settings.workers) return;
      printed = true;
      process.stdout.write(
        [
          `fleetplane is listening on ${m.url} (${settings.workers} workers)`,
          token ? `admin token: ${token}` : 'admin token: kept in the database as a hash (shown only when it was generated; set --admin-token to choose one)',
          '',
        ].join('\n'),
      );
    });
    return w;
  };
  for (let i = 0; i < settings.workers; i++) spawn();

  let exitCode = 0;
  return new Promise<number>((resolve) => {
    const finish = (): void => {
      stopMetrics();
      stopRegistry();
      // The database goes last: draining workers still write their final statuses.
      const stoppingAt = performance.now();
      void (embedded ? embedded.stop() : Promise.resolve()).then(
        () => {
          const ms = Math.round(performance.now() - stoppingAt);
          // As the workers' own stop: slow enough to lengthen a restart, it is worth seeing at the default level.
          if (ms > SLOW_EMBEDDED_STOP_MS) logger.warn({ ms }, 'stopping the embedded PostgreSQL was slow');
          resolve(exitCode);
        },
        (err: unknown) => {
          logger.error({ err }, 'stopping the embedded PostgreSQL failed');
          resolve(1);
        },
      );
    };
    cluster.on('exit', (worker, code, signal) => {
      running.delete(worker);
      listening.delete(worker.id);
      if (stopping) {
        if (running.size === 0) finish();
        return;
      }
      restarts++;
      const delay = fullJitterDelay(restarts, RESTART_BASE_MS, RESTART_CAP_MS);
      logger.error({ pid: worker.process.pid, code, signal, restartInMs: Math.round(delay) }, 'worker died; restarting');
      setTimeout(() => {
        if (!stopping) spawn();
      }, delay).unref();
    });
    const stop = (sig: NodeJS.Signals | 'storage lost'): void => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal: sig }, 'stopping workers');
      if (running.size === 0) finish();
      for (const w of running) w.process.kill('SIGTERM');
    };
    void embedded?.exited.then(({ expected }) => {
      if (expected || stopping) return;
      logger.fatal('the embedded PostgreSQL exited while the workers were running; stopping them');
      exitCode = 1;
      stop('storage lost');
    });
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
    process.on('SIGHUP', () => {
      if (!stopping) for (const w of running) w.process.kill('SIGHUP');
    });
  });
}
