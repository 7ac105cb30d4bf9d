import { ReliableBus, type ReliabilityOptions } from '../../src/server/bus/index.js';

/** What the hub does with one payload on its way to one bus. */
export type Route = 'deliver' | 'drop' | { delayMs: number } | { until: Promise<unknown> };

/**
 * An in-process transport for testing the reliable layer alone: every
 * published payload goes to every attached bus (the sender included), each
 * delivery passing through `route`.
 */
export class Hub {
  readonly buses = new Set<HubBus>();
  route: (to: HubBus, payload: string) => Route = () => 'deliver';

  async publish(payloads: readonly string[]): Promise<void> {
    for (const payload of payloads) {
      for (const bus of this.buses) {
        const r = this.route(bus, payload);
        if (r === 'deliver') bus.deliver(payload);
        else if (r === 'drop') continue;
        else if ('until' in r) void r.until.then(() => bus.deliver(payload));
        else setTimeout(() => bus.deliver(payload), r.delayMs);
      }
    }
  }
}

export class HubBus extends ReliableBus {
  listenerRestarts = 0;
  /** When set, a listener restart does not cure deafness (the hub keeps dropping). */
  onRestart: (() => void) | undefined;

  private constructor(
    private readonly hub: Hub,
    options: ReliabilityOptions,
  ) {
    super(options);
  }

  static open(hub: Hub, options: ReliabilityOptions): HubBus {
    const bus = new HubBus(hub, options);
    hub.buses.add(bus);
    bus.startReliability();
    return bus;
  }

  get id(): string {
    return this.publisherId;
  }

  deliver(payload: string): void {
    if (this.hub.buses.has(this)) this.received(payload);
  }

  /** Simulates the listening connection coming back after an outage. */
  simulateReconnect(): void {
    this.listenerReconnected();
  }

  async notifyInTransaction(): Promise<boolean> {
    return false;
  }

  protected publishPayloads(payloads: readonly string[]): Promise<void> {
    return this.hub.publish(payloads);
  }

  protected async restartListener(): Promise<void> {
    this.listenerRestarts++;
    this.onRestart?.();
    this.listenerReconnected();
  }

  protected async closeTransport(): Promise<void> {
    this.hub.buses.delete(this);
  }
}
