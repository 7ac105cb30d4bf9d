import type { ReplicaInfo } from '../replicas/index.js';

/**
 * The live replicas (the `replicas` table), read at most once per `maxAgeMs`
 * however many ask: where the relay finds another replica's private URL, and
 * which holders of a key are still alive (a registry entry counts only while
 * its replica's lease does, as for agent tunnels).
 */
export class ReplicaDirectory {
  #live: ReadonlyMap<string, ReplicaInfo> = new Map();
  #readAt = Number.NEGATIVE_INFINITY;
  #reading: Promise<ReadonlyMap<string, ReplicaInfo>> | undefined;

  constructor(
    private readonly read: () => Promise<ReplicaInfo[]>,
    private readonly maxAgeMs: number,
  ) {}

  /** The live replicas by id; a failed read rejects (the caller drops what waited on it). */
  live(): Promise<ReadonlyMap<string, ReplicaInfo>> {
    if (performance.now() - this.#readAt < this.maxAgeMs) return Promise.resolve(this.#live);
    this.#reading ??= this.read()
      .then((rows) => {
        this.#live = new Map(rows.map((r) => [r.id, r]));
        this.#readAt = performance.now();
        return this.#live;
      })
      .finally(() => {
        this.#reading = undefined;
      });
    return this.#reading;
  }

  /** A live replica's private URL; undefined when it is gone or has none. */
  async privateUrlOf(replicaId: string): Promise<string | undefined> {
    return (await this.live()).get(replicaId)?.privateUrl ?? undefined;
  }

  /** The next read goes to the database (a link failed: the replica may be gone). */
  invalidate(): void {
    this.#readAt = Number.NEGATIVE_INFINITY;
  }
}
