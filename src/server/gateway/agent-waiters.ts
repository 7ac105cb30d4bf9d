import type { Logger } from 'pino';
import { agentSignal } from '../../protocol/index.js';
import type { SignalBus, Subscription } from '../bus/index.js';
import type { ReplicaInfo } from '../replicas/index.js';
import { ApiError } from '../errors.js';
import type { AgentRegistry } from './agent-registry.js';
import type { GatewayMetrics, WaitOutcome } from './gateway-metrics.js';

/** Another replica that holds a tunnel to the device. */
export interface Candidate {
  readonly id: string;
  readonly privateUrl: string;
}

/** Where a device can be reached now. */
export type Reachable = { readonly local: true } | { readonly local: false; readonly remote: readonly Candidate[] };

export interface AgentWaitersOptions {
  replicaId: string;
  bus: SignalBus;
  registry: AgentRegistry;
  /** Live replicas (lease not expired). */
  liveReplicas: () => Promise<ReplicaInfo[]>;
  /** Whether this replica holds a tunnel to the device now. */
  hasLocal: (deviceId: string) => boolean;
  /** Lost-signal safety net: how often a device with parked requests is looked up anyway. */
  recheckMs: number;
  metrics: GatewayMetrics;
  logger: Logger;
}

type Listener = (err?: Error) => void;

/**
 * Every request for one device on this replica shares one of these: one
 * bus subscription to `agent:<device>` (taken before the first lookup, so no
 * connect can slip between a lookup and the wait), and one registry read per
 * wake-up, whatever the number of requests. A lookup stays valid until the
 * next wake-up: a request that arrives meanwhile reuses it.
 */
class DeviceGroup {
  handles = 0;
  /** Bumped by each wake-up; a lookup is current when it was read in the current generation. */
  generation = 0;
  lookup: Reachable | undefined;
  lookupGeneration = -1;
  readonly listeners = new Set<Listener>();
  subscription: Subscription | undefined;
  recheck: NodeJS.Timeout | undefined;
  #reading: Promise<void> | undefined;
  #readAgain = false;

  constructor(
    readonly deviceId: string,
    private readonly read: (group: DeviceGroup) => Promise<void>,
  ) {}

  get current(): boolean {
    return this.lookup !== undefined && this.lookupGeneration === this.generation;
  }

  /**
   * One read at a time: callers during a read share it; with `again` (a
   * wake-up during the read) it runs once more after.
   */
  refresh(again = false): Promise<void> {
    if (this.#reading) {
      if (again) this.#readAgain = true;
      return this.#reading;
    }
    this.#reading = (async () => {
      try {
        do {
          this.#readAgain = false;
          await this.read(this);
        } while (this.#readAgain);
        this.notify();
      } catch (err) {
        const error = err instanceof Error ? err : new Error(String(err));
        this.notify(error);
        throw error;
      } finally {
        this.#reading = undefined;
      }
    })();
    return this.#reading;
  }

  notify(err?: Error): void {
    for (const l of [...this.listeners]) l(err);
  }
}

/**
 * Requests waiting for a device to become reachable (docs/protocol.md `?wait=`).
 * They are woken by the `agent:<device>` bus signal a replica sends when a
 * tunnel opens, never by polling per request; `recheckMs` repairs lost
 * signals with one read per device.
 */
export class AgentWaiters {
  readonly #groups = new Map<string, DeviceGroup>();
  #parked = 0;
  #closed: Error | undefined;

  constructor(private readonly options: AgentWaitersOptions) {}

  /** Requests parked now (tests and the `fleetplane_agent_rpc_waiters` gauge). */
  get parked(): number {
    return this.#parked;
  }

  /** Devices with at least one open handle (each holds one bus subscription). */
  get devices(): number {
    return this.#groups.size;
  }

  /** Opens a handle for one request; `close` it when the request ends. */
  open(deviceId: string): WaitHandle {
    let group = this.#groups.get(deviceId);
    if (!group) {
      const g = new DeviceGroup(deviceId, (x) => this.read(x));
      g.subscription = this.options.bus.subscribe(agentSignal(deviceId), () => this.wake(g));
      this.#groups.set(deviceId, g);
      group = g;
    }
    group.handles++;
    return new WaitHandle(group, this);
  }

  /** Fails every parked request and refuses new ones (shutdown). */
  close(reason: Error): void {
    this.#closed = reason;
    for (const g of this.#groups.values()) g.notify(reason);
  }

  /** @internal */
  get closedReason(): Error | undefined {
    return this.#closed;
  }

  /** @internal */
  hasLocal(deviceId: string): boolean {
    return this.options.hasLocal(deviceId);
  }

  /** @internal Waits for the group's next lookup, the deadline, or the signal. */
  park(group: DeviceGroup, deadline: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const done = (err?: unknown): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        group.listeners.delete(listener);
        this.#parked--;
        this.options.metrics.waiters.dec();
        if (group.listeners.size === 0 && group.recheck) {
          clearInterval(group.recheck);
          group.recheck = undefined;
        }
        if (err === undefined) resolve();
        else reject(err);
      };
      const listener: Listener = (err) => done(err);
      const onAbort = (): void => done(signal.reason ?? new Error('aborted'));
      const timer = setTimeout(() => done(), Math.max(0, deadline - Date.now()));
      signal.addEventListener('abort', onAbort, { once: true });
      group.listeners.add(listener);
      this.#parked++;
      this.options.metrics.waiters.inc();
      if (!group.recheck) {
        group.recheck = setInterval(() => this.wake(group), this.options.recheckMs);
        group.recheck.unref();
      }
      if (this.#closed) done(this.#closed);
      else if (signal.aborted) onAbort();
    });
  }

  /** @internal */
  release(group: DeviceGroup): void {
    if (--group.handles > 0) return;
    group.subscription?.close();
    clearInterval(group.recheck);
    this.#groups.delete(group.deviceId);
  }

  private wake(group: DeviceGroup): void {
    group.generation++;
    // Without parked requests the next request reads for itself.
    if (group.listeners.size > 0) {
      group.refresh(true).catch((err: unknown) => this.options.logger.warn({ err, device: group.deviceId }, 'agent lookup failed'));
    }
  }

  private async read(group: DeviceGroup): Promise<void> {
    const generation = group.generation;
    const { deviceId } = group;
    if (this.options.hasLocal(deviceId)) {
      group.lookup = { local: true };
    } else {
      const holders = (await this.options.registry.lookup(deviceId)).filter((id) => id !== this.options.replicaId);
      let remote: Candidate[] = [];
      if (holders.length > 0) {
        // Read after the registry: a replica's lease exists before any of its entries.
        const live = await this.options.liveReplicas();
        remote = live.flatMap((r) => (holders.includes(r.id) && r.privateUrl ? [{ id: r.id, privateUrl: r.privateUrl }] : []));
      }
      group.lookup = { local: false, remote };
    }
    group.lookupGeneration = generation;
  }
}

/**
 * One request's view of its device. `next` says where to try; the caller
 * marks each replica it tried, and `next` won't offer it again until a
 * wake-up says something connected.
 */
export class WaitHandle {
  readonly #tried = new Set<string>();
  /** The lookup generation `#tried` belongs to; a newer lookup offers every holder again. */
  #triedGeneration = -1;
  #offeredGeneration = -1;
  #closed = false;
  /** Time spent parked, once the request had to wait. */
  waitedMs: number | undefined;
  outcome: WaitOutcome = 'connected';

  constructor(
    private readonly group: DeviceGroup,
    private readonly waiters: AgentWaiters,
  ) {}

  /**
   * Resolves with where the device can be reached, waiting until `deadline`
   * (ms since the epoch) for it to connect. Rejects with 504
   * `agent_not_connected` at the deadline, 503 when the registry can't be
   * read or the gateway shuts down, and with the signal's reason on abort.
   */
  async next(deadline: number, signal: AbortSignal): Promise<Reachable> {
    const g = this.group;
    let parkedAt: number | undefined;
    try {
      for (;;) {
        if (signal.aborted) throw signal.reason;
        const closed = this.waiters.closedReason;
        if (closed) throw closed;
        if (this.waiters.hasLocal(g.deviceId)) return { local: true };
        if (!g.current) {
          try {
            await g.refresh();
          } catch (err) {
            throw new ApiError('unavailable', 'the agent registry could not be read', undefined, { cause: err });
          }
          continue;
        }
        if (this.#triedGeneration !== g.lookupGeneration) this.#tried.clear();
        const lookup = g.lookup;
        const remote = lookup && !lookup.local ? lookup.remote.filter((c) => !this.#tried.has(c.id)) : [];
        if (remote.length > 0) {
          this.#offeredGeneration = g.lookupGeneration;
          return { local: false, remote };
        }
        if (Date.now() >= deadline) throw new ApiError('agent_not_connected', 'the agent did not connect in time');
        parkedAt ??= Date.now();
        await this.waiters.park(g, deadline, signal);
      }
    } catch (err) {
      this.outcome = signal.aborted ? 'aborted' : err instanceof ApiError && err.code === 'agent_not_connected' ? 'timeout' : 'failed';
      throw err;
    } finally {
      if (parkedAt !== undefined) this.waitedMs = (this.waitedMs ?? 0) + (Date.now() - parkedAt);
    }
  }

  /** The request tried `replicaId` and it couldn't deliver. */
  markTried(replicaId: string): void {
    if (this.#triedGeneration !== this.#offeredGeneration) {
      this.#tried.clear();
      this.#triedGeneration = this.#offeredGeneration;
    }
    this.#tried.add(replicaId);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.waiters.release(this.group);
  }
}
