import { RELAY_LOCATION_CACHE_MS } from '../../protocol/index.js';
import type { AgentRegistry } from '../gateway/index.js';
import type { ReplicaDirectory } from './replica-directory.js';

/**
 * How long "nobody holds this key" is trusted: shorter than where a key is
 * held, so that a session that opens on another replica is reached soon after
 * its registry entry is written (within the announcer's 250 ms rounds).
 */
const ABSENT_CACHE_MS = 500;
/** Keys whose location is kept at most; past it the oldest are forgotten first. */
const MAX_ENTRIES = 65_536;

interface Entry {
  readonly replicas: readonly string[];
  readonly until: number;
}

/**
 * Where the relay sessions of other replicas are: the relay registry's
 * answer for a session id (organization and key), without this replica and
 * without replicas whose lease is not live, cached for at most
 * RELAY_LOCATION_CACHE_MS (500 ms when nobody holds it), and forgotten at
 * once for a replica whose link failed. Lookups of one id are single-flight.
 */
export class RelayLocations {
  readonly #cache = new Map<string, Entry>();
  readonly #lookups = new Map<string, Promise<readonly string[]>>();

  constructor(
    private readonly o: {
      replicaId: string;
      registry: AgentRegistry;
      directory: ReplicaDirectory;
    },
  ) {}

  /** The other replicas holding `id`, when known now; undefined when it must be looked up. */
  cached(id: string): readonly string[] | undefined {
    const e = this.#cache.get(id);
    if (e === undefined) return undefined;
    if (performance.now() < e.until) return e.replicas;
    this.#cache.delete(id);
    return undefined;
  }

  /** Looks `id` up in the registry (one read, shared by concurrent callers) and caches the answer. Rejects when the registry can't be read. */
  lookup(id: string): Promise<readonly string[]> {
    let p = this.#lookups.get(id);
    if (!p) {
      p = this.#read(id).finally(() => this.#lookups.delete(id));
      this.#lookups.set(id, p);
    }
    return p;
  }

  /** Forgets every location naming `replicaId` (its link failed: it may be gone, or its sessions moved). */
  forgetReplica(replicaId: string): void {
    for (const [id, e] of this.#cache) if (e.replicas.includes(replicaId)) this.#cache.delete(id);
  }

  async #read(id: string): Promise<readonly string[]> {
    const [holders, live] = await Promise.all([this.o.registry.lookup(id), this.o.directory.live()]);
    const replicas = holders.filter((r) => r !== this.o.replicaId && live.has(r));
    if (this.#cache.size >= MAX_ENTRIES) {
      const oldest = this.#cache.keys().next();
      if (!oldest.done) this.#cache.delete(oldest.value);
    }
    this.#cache.set(id, { replicas, until: performance.now() + (replicas.length > 0 ? RELAY_LOCATION_CACHE_MS : ABSENT_CACHE_MS) });
    return replicas;
  }
}
