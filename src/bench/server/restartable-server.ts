import { nowMs } from '../clock.js';
import { benchDataDir } from './data-dir.js';
import { FleetServer, type FleetServerOptions } from './fleet-server.js';
import type { BenchPostgres } from './postgres.js';

/** Where a restartable server keeps its data. */
export type StorageName = 'embedded' | 'postgresql';

/** Harness times (nowMs()) of one restart. */
export interface RestartTimes {
  sigtermAt: number;
  exitedAt: number;
  /** The new process was spawned: anything that connects after this reaches it. */
  spawnAt: number;
  /** The new process printed its "listening" line. */
  listeningAt: number;
}

/** The embedded PostgreSQL runs initdb at its first start, slowly on a busy machine. */
const START_TIMEOUT_MS = 120_000;

/**
 * A `fleetplane serve` whose data outlives its process, so it can be
 * restarted on the same data and the same port: the embedded PostgreSQL in
 * a temporary directory (the default storage, not `--memory`), or a fresh
 * database on a throwaway PostgreSQL cluster (the caller owns the cluster).
 * The data directory is removed, and a PostgreSQL a killed server left on
 * it ended, when the server stops or the harness exits.
 */
export class RestartableServer {
  private constructor(
    private server: FleetServer,
    private readonly options: FleetServerOptions,
    readonly storage: StorageName,
    private readonly removeData: () => void,
  ) {}

  static async start(storage: StorageName, flags: readonly string[], pg: BenchPostgres | undefined, database: string): Promise<RestartableServer> {
    if (storage === 'postgresql' && !pg) throw new Error('postgresql storage needs a cluster');
    const dir = storage === 'embedded' ? benchDataDir('embedded') : undefined;
    const removeData = (): void => dir?.dispose();
    const options: FleetServerOptions = {
      flags,
      startTimeoutMs: START_TIMEOUT_MS,
      ...(dir ? { dataDir: dir.path } : { databaseUrl: await (pg as BenchPostgres).createDatabase(database) }),
    };
    try {
      const server = await FleetServer.start(options);
      return new RestartableServer(server, { ...options, port: Number(new URL(server.url).port) }, storage, removeData);
    } catch (err) {
      removeData();
      throw err;
    }
  }

  /** The process serving now (it changes with each restart). */
  get current(): FleetServer {
    return this.server;
  }

  get url(): string {
    return this.server.url;
  }

  get commandLine(): string {
    return this.server.commandLine;
  }

  /** SIGTERM to the server's process group (SIGKILL after `graceMs`), then the same command on the same data and port. */
  async restart(graceMs = 10_000): Promise<RestartTimes> {
    const sigtermAt = nowMs();
    await this.server.stop(graceMs);
    const exitedAt = nowMs();
    const spawnAt = nowMs();
    this.server = await FleetServer.start(this.options);
    return { sigtermAt, exitedAt, spawnAt, listeningAt: nowMs() };
  }

  async stop(): Promise<void> {
    try {
      await this.server.stop();
    } finally {
      this.removeData();
    }
  }
}
