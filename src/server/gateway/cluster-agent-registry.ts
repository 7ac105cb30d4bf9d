/**
 * The agent registry of `serve --workers N` without Redis: the primary
 * process keeps which worker holds a tunnel to which device, and the
 * workers ask it over the cluster's IPC channel. Every worker is a replica
 * of its own (own id, own loopback private listener), so a request landing
 * on one worker reaches an agent whose tunnel another worker holds, as
 * between replicas with `--redis-url`.
 */
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import type { AgentRegistry } from './agent-registry.js';

/**
 * The IPC message types of the directories the primary keeps: one per kind
 * of id (a message of one never reaches the other's directory).
 */
export const CLUSTER_REGISTRIES = {
  /** Agent tunnels, by device id. */
  agents: 'fleetplane:agent-registry',
  /** Relay sessions, by organization and WireGuard key (src/server/relay/). */
  relay: 'fleetplane:relay-registry',
} as const;
export type ClusterRegistryType = (typeof CLUSTER_REGISTRIES)[keyof typeof CLUSTER_REGISTRIES];
/** Past this many requests waiting for the primary, lookups fail (503) and syncs stop waiting for their reply. */
const MAX_IN_FLIGHT = 65_536;
/** A primary busy for this long (the embedded PostgreSQL runs in it) is treated as not answering. */
const REPLY_TIMEOUT_MS = 10_000;
/** Most devices one `set` message carries; the rest go in the next ones. */
const MAX_SET_BATCH = 4_096;

type Request =
  /** Each device, and whether this replica holds a tunnel to it. */
  | { type: ClusterRegistryType; op: 'set'; seq: number; replica: string; devices: [string, boolean][] }
  | { type: ClusterRegistryType; op: 'lookup'; seq: number; device: string }
  | { type: ClusterRegistryType; op: 'clear'; seq: number; replica: string };

interface Reply {
  type: ClusterRegistryType;
  op: 'done';
  seq: number;
  replicas?: string[];
}

function isRequest(m: unknown, type: ClusterRegistryType): m is Request {
  if (typeof m !== 'object' || m === null) return false;
  const r = m as { type?: unknown; op?: unknown; seq?: unknown };
  return r.type === type && typeof r.seq === 'number' && (r.op === 'set' || r.op === 'lookup' || r.op === 'clear');
}

function isReply(m: unknown, type: ClusterRegistryType): m is Reply {
  if (typeof m !== 'object' || m === null) return false;
  const r = m as { type?: unknown; op?: unknown; seq?: unknown };
  return r.type === type && r.op === 'done' && typeof r.seq === 'number';
}

/** The primary did not answer, or the worker is no longer connected to it. */
export class ClusterRegistryError extends Error {
  override readonly name = 'ClusterRegistryError';
}

/**
 * In the primary: the directory the workers' registries read and write.
 * A device maps to the replica ids holding a tunnel to it (one string in
 * the common case of one, to keep the primary's share of a 10,000-agent
 * fleet small). A worker that exits loses its entries at once, so a dead
 * worker is never offered. Returns a function that stops answering.
 * `type`: which directory (CLUSTER_REGISTRIES; the agents' by default),
 * each served by its own call.
 */
export function serveClusterAgentRegistry(logger: Logger, type: ClusterRegistryType = CLUSTER_REGISTRIES.agents): () => void {
  const holders = new Map<string, string | string[]>();
  const replicaOf = new Map<Worker, string>();
  const remove = (device: string, replica: string): void => {
    const h = holders.get(device);
    if (h === undefined) return;
    if (typeof h === 'string') {
      if (h === replica) holders.delete(device);
      return;
    }
    const rest = h.filter((r) => r !== replica);
    if (rest.length === h.length) return;
    if (rest.length === 1 && rest[0] !== undefined) holders.set(device, rest[0]);
    else holders.set(device, rest);
  };
  const add = (device: string, replica: string): void => {
    const h = holders.get(device);
    if (h === undefined) holders.set(device, replica);
    else if (typeof h === 'string') {
      if (h !== replica) holders.set(device, [h, replica]);
    } else if (!h.includes(replica)) h.push(replica);
  };
  const clear = (replica: string): void => {
    for (const [device, h] of holders) if (h === replica || (typeof h !== 'string' && h.includes(replica))) remove(device, replica);
  };
  const onMessage = (worker: Worker, m: unknown): void => {
    if (!isRequest(m, type)) return;
    const reply: Reply = { type, op: 'done', seq: m.seq };
    if (m.op === 'set') {
      replicaOf.set(worker, m.replica);
      for (const [device, held] of m.devices) {
        if (held) add(device, m.replica);
        else remove(device, m.replica);
      }
    } else if (m.op === 'clear') clear(m.replica);
    else {
      const h = holders.get(m.device);
      reply.replicas = h === undefined ? [] : typeof h === 'string' ? [h] : [...h];
    }
    if (worker.isConnected()) worker.send(reply);
  };
  const onExit = (worker: Worker): void => {
    const replica = replicaOf.get(worker);
    replicaOf.delete(worker);
    if (replica === undefined) return;
    clear(replica);
    logger.info({ replica, pid: worker.process.pid, registry: type }, 'worker gone: its entries are no longer offered');
  };
  cluster.on('message', onMessage);
  cluster.on('exit', onExit);
  return () => {
    cluster.off('message', onMessage);
    cluster.off('exit', onExit);
  };
}

/** A worker's IPC channel to the primary: its `process` (tests pass their own). */
export interface PrimaryChannel {
  readonly connected: boolean;
  send(message: unknown): void;
  onMessage(listener: (message: unknown) => void): void;
  offMessage(listener: (message: unknown) => void): void;
}

const processChannel: PrimaryChannel = {
  get connected() {
    return process.send !== undefined && process.connected;
  },
  send: (m) => process.send?.(m),
  onMessage: (l) => process.on('message', l),
  offMessage: (l) => process.off('message', l),
};

export interface ClusterAgentRegistryOptions {
  replicaId: string;
  /** Which of the primary's directories (default: the agents'). */
  type?: ClusterRegistryType;
  /** Default: this process's channel to the cluster primary. */
  channel?: PrimaryChannel;
  connected: (deviceId: string) => boolean;
  onRead?: () => void;
  logger: Logger;
}

interface Waiting {
  resolve: (replicas: string[]) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * In a worker: the AgentRegistry contract over the primary's directory.
 * The IPC channel delivers a worker's messages in order, so the last `sync`
 * for a device wins without per-device serialization here; `sync` resolves
 * once the primary has applied it, so the `agent:<device>` signal sent after
 * it finds the entry. The syncs of one event-loop turn go in one message
 * (each device with whether it is held when the message leaves): 10,000
 * agents joining cost a few hundred messages, not 10,000 and their replies.
 */
export class ClusterAgentRegistry implements AgentRegistry {
  readonly #waiting = new Map<number, Waiting>();
  /** Devices to sync with the next message, each with the callers waiting for it. */
  #sets = new Map<string, (() => void)[]>();
  #setsScheduled = false;
  #stopped = false;
  #seq = 0;
  #reads = 0;
  readonly #type: ClusterRegistryType;
  readonly #onMessage = (m: unknown): void => {
    if (!isReply(m, this.#type)) return;
    const w = this.#waiting.get(m.seq);
    if (!w) return;
    this.#waiting.delete(m.seq);
    clearTimeout(w.timer);
    w.resolve(m.replicas ?? []);
  };

  constructor(private readonly options: ClusterAgentRegistryOptions) {
    this.#type = options.type ?? CLUSTER_REGISTRIES.agents;
  }

  get reads(): number {
    return this.#reads;
  }

  get #channel(): PrimaryChannel {
    return this.options.channel ?? processChannel;
  }

  async start(): Promise<void> {
    this.#channel.onMessage(this.#onMessage);
  }

  async lookup(deviceId: string): Promise<string[]> {
    this.#reads++;
    this.options.onRead?.();
    return this.#ask({ type: this.#type, op: 'lookup', seq: ++this.#seq, device: deviceId }, true);
  }

  sync(deviceId: string): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const waiters = this.#sets.get(deviceId);
      if (waiters) waiters.push(resolve);
      else this.#sets.set(deviceId, [resolve]);
      if (this.#setsScheduled) return;
      this.#setsScheduled = true;
      setImmediate(() => this.#sendSets());
    });
  }

  #sendSets(): void {
    this.#setsScheduled = false;
    while (this.#sets.size > 0) {
      const batch = new Map<string, (() => void)[]>();
      for (const [device, waiters] of this.#sets) {
        if (batch.size >= MAX_SET_BATCH) break;
        batch.set(device, waiters);
      }
      for (const device of batch.keys()) this.#sets.delete(device);
      const devices = [...batch.keys()].map((d): [string, boolean] => [d, this.options.connected(d)]);
      const done = (): void => {
        for (const waiters of batch.values()) for (const w of waiters) w();
      };
      this.#ask({ type: this.#type, op: 'set', seq: ++this.#seq, replica: this.options.replicaId, devices }, false).then(done, (err: unknown) => {
        // The primary is gone or stuck: the whole server is going down with it, nothing to repair.
        this.options.logger.warn({ err, devices: devices.length }, 'agent registry entries could not be confirmed by the primary');
        done();
      });
    }
  }

  async stop(): Promise<void> {
    // Entries sent after the clear would outlive it; the primary drops this worker's entries when it exits anyway.
    this.#stopped = true;
    for (const waiters of this.#sets.values()) for (const w of waiters) w();
    this.#sets.clear();
    try {
      await this.#ask({ type: this.#type, op: 'clear', seq: ++this.#seq, replica: this.options.replicaId }, false);
    } catch (err) {
      this.options.logger.warn({ err }, 'the primary did not confirm removing this worker’s agent registry entries (it drops them when the worker exits)');
    }
    this.#channel.offMessage(this.#onMessage);
    for (const [seq, w] of this.#waiting) {
      this.#waiting.delete(seq);
      clearTimeout(w.timer);
      w.reject(new ClusterRegistryError('the worker is stopping'));
    }
  }

  /** Sends `request`; waits for its reply unless too many are waiting and `mustWait` is false. */
  #ask(request: Request, mustWait: boolean): Promise<string[]> {
    const channel = this.#channel;
    if (!channel.connected) return Promise.reject(new ClusterRegistryError('not connected to the primary process'));
    if (this.#waiting.size >= MAX_IN_FLIGHT) {
      if (mustWait) return Promise.reject(new ClusterRegistryError(`${MAX_IN_FLIGHT} agent registry requests are already waiting for the primary`));
      channel.send(request);
      return Promise.resolve([]);
    }
    return new Promise<string[]>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(request.seq);
        reject(new ClusterRegistryError(`the primary did not answer within ${REPLY_TIMEOUT_MS} ms`));
      }, REPLY_TIMEOUT_MS);
      timer.unref();
      this.#waiting.set(request.seq, { resolve, reject, timer });
      channel.send(request);
    });
  }
}
