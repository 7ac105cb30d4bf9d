import cluster, { type Worker } from 'node:cluster';
import { migrate, openPostgres } from '../server/db/index.js';
import { resolveAdminToken } from '../server/store/index.js';
import { serveClusterMetrics, type Settings } from '../server/index.js';
import { cliLogger } from './cli-logger.js';

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

const RESTART_BASE_MS = 500;
const RESTART_CAP_MS = 30_000;

/**
 * `--workers N`: the primary migrates and settles the admin token once, then
 * runs N server processes sharing the port (node:cluster). A worker that dies
 * is restarted with jittered backoff; SIGTERM is passed to every worker and
 * the primary exits 0 when they have drained. SIGHUP is passed on too (each
 * worker reloads its TLS certificate).
 */
export async function runWorkers(settings: Settings, argv: readonly string[]): Promise<number> {
  const logger = cliLogger({ level: settings.logLevel, base: { service: 'fleetplane', role: 'primary' } });
  if (!settings.databaseUrl) throw new Error('--workers needs --database-url');
  const db = await openPostgres(settings.databaseUrl, { max: 1 });
  let token: string | undefined;
  try {
    await migrate(db);
    token = (await resolveAdminToken(db, { configured: settings.adminToken, dataDir: undefined })).token;
  } finally {
    await db.close();
  }

  cluster.setupPrimary({ args: ['serve', ...argv] });
  const stopMetrics = serveClusterMetrics(logger);
  let stopping = false;
  let printed = false;
  let restarts = 0;
  // Counted here, not from cluster.workers: a worker leaves that map only once both its process
  // exited and its IPC channel closed, in either order, so it may still be there at 'exit'.
  const running = new Set<Worker>();
  const spawn = (): Worker => {
    const w = cluster.fork();
    running.add(w);
    w.on('message', (m: unknown) => {
      if (!isWorkerReady(m) || printed) return;
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

  return new Promise<number>((resolve) => {
    cluster.on('exit', (worker, code, signal) => {
      running.delete(worker);
      if (stopping) {
        if (running.size === 0) {
          stopMetrics();
          resolve(0);
        }
        return;
      }
      restarts++;
      const delay = Math.random() * Math.min(RESTART_CAP_MS, RESTART_BASE_MS * 2 ** Math.min(restarts, 16));
      logger.error({ pid: worker.process.pid, code, signal, restartInMs: Math.round(delay) }, 'worker died; restarting');
      setTimeout(() => {
        if (!stopping) spawn();
      }, delay).unref();
    });
    const stop = (sig: NodeJS.Signals): void => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal: sig }, 'stopping workers');
      if (running.size === 0) resolve(0);
      for (const w of running) w.process.kill('SIGTERM');
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
    process.on('SIGHUP', () => {
      if (!stopping) for (const w of running) w.process.kill('SIGHUP');
    });
  });
}
