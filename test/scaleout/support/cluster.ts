import { createDatabase } from '../../support/postgres-server.js';
import { startReplica, type ReplicaFaults, type ServerProcess } from './replica-process.js';

/** Settings every replica of these suites gets unless a test overrides them. */
export const BASE_ARGS: readonly string[] = [
  // A lost signal must show as a stall, not be papered over by the periodic re-read.
  '--safety-check-interval',
  '600',
  '--bookmark-interval',
  '1',
];

/** Replicas of `fleetplane serve` sharing one fresh PostgreSQL database. */
export class Cluster {
  constructor(
    readonly databaseUrl: string,
    readonly replicas: ServerProcess[],
  ) {}

  /** URLs of the replicas still running. */
  liveUrls(): string[] {
    return this.replicas.filter((r) => r.alive).map((r) => r.url);
  }

  /** Every replica's URL, dead ones included (what a client that doesn't know of a crash would use). */
  allUrls(): string[] {
    return this.replicas.map((r) => r.url);
  }

  replica(i: number): ServerProcess {
    const r = this.replicas[i];
    if (!r) throw new Error(`no replica ${i}`);
    return r;
  }

  /** Everything the replicas printed, for failure messages. */
  output(): string {
    return this.replicas.map((r) => r.output()).join('\n');
  }
}

/** Starts `n` replicas (named `<prefix>0`, `<prefix>1`, ...) on a fresh database of the shared cluster. */
export async function startCluster(adminUrl: string, n: number, args: readonly string[] = [], prefix = 'replica', faults?: ReplicaFaults): Promise<Cluster> {
  const databaseUrl = await createDatabase(adminUrl, 'scaleout');
  // Together: migrations take an advisory lock, so concurrent starts are safe.
  const started = await Promise.allSettled(
    Array.from({ length: n }, (_, i) => startReplica(`${prefix}${i}`, { databaseUrl, args: [...BASE_ARGS, ...args], ...(faults ? { faults } : {}) })),
  );
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  return new Cluster(
    databaseUrl,
    started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : [])),
  );
}
