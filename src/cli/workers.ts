import cluster, { type Worker } from 'node:cluster';
import pino from 'pino';
import { migrate, openPostgres } from '../server/db/index.js';
import { resolveAdminToken } from '../server/store/index.js';
import type { Settings } from '../server/index.js';

/** Message a worker sends the primary once it listens. */
export interface WorkerReady {
  type: 'fleetplane:listening';
  url: string;
}

export function isWorkerReady(m: unknown): m is WorkerReady {
  return typeof m === 'object' && m !== null && (m as { type?: unknown }).type === 'fleetplane:listening';
}

const RESTART_BASE_MS = 500;
const RESTART_CAP_MS = 30_000;

/**
 * `--workers N`: the primary migrates and settles the admin token once, then
 * runs N server processes sharing the port (node:cluster). A worker that dies
 * is restarted with jittered backoff; SIGTERM is passed to every worker and
 * the primary exits 0 when they have drained.
 */
export async function runWorkers(settings: Settings, argv: readonly string[]): Promise<number> {
  const logger = pino({ level: settings.logLevel, base: { service: 'fleetplane', role: 'primary' } });
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
  let stopping = false;
  let printed = false;
  let restarts = 0;
  const spawn = (): Worker => {
    const w = cluster.fork();
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
      if (stopping) {
        if (Object.keys(cluster.workers ?? {}).length === 0) resolve(0);
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
      const workers = Object.values(cluster.workers ?? {});
      if (workers.length === 0) resolve(0);
      for (const w of workers) w?.process.kill('SIGTERM');
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}
