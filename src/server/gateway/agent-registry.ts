/**
 * Which replicas hold a tunnel to which device; the same contract serves
 * the relay's sessions (src/server/relay/), whose ids are an organization
 * and a WireGuard key instead of a device id.
 *
 * Contract:
 * - `lookup` returns the ids of replicas with a live entry for the device
 *   (this replica's own included when it has one); entries past their
 *   expiry are never returned. Every call is one read (counted in `reads`).
 * - `sync` makes this replica's entry for the device match whether it holds
 *   a tunnel now (`connected(deviceId)`, read when the write runs, so the
 *   last call wins). Calls for one device are serialized. It never rejects:
 *   a failed write is logged and repaired by the periodic refresh.
 * - `stop` removes every entry of this replica (graceful shutdown).
 */
export interface AgentRegistry {
  lookup(deviceId: string): Promise<string[]>;
  sync(deviceId: string): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly reads: number;
}

/** One process: the tunnel table is the whole registry. */
export class MemoryAgentRegistry implements AgentRegistry {
  #reads = 0;

  constructor(
    private readonly replicaId: string,
    private readonly connected: (deviceId: string) => boolean,
    private readonly onRead: () => void = () => undefined,
  ) {}

  get reads(): number {
    return this.#reads;
  }

  async lookup(deviceId: string): Promise<string[]> {
    this.#reads++;
    this.onRead();
    return this.connected(deviceId) ? [this.replicaId] : [];
  }

  async sync(): Promise<void> {}
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
}
