/** Where presence transitions go (the status batcher). */
export interface PresenceSink {
  connected(deviceId: string, orgId: string): void;
  disconnected(deviceId: string, orgId: string): void;
}

/**
 * The devices connected to this replica: a count of each device's open
 * tunnels and watch streams. Only a device's first connection opening and
 * its last one closing reach the sink, so a device that holds a tunnel and
 * a stream, or reconnects make-before-break, costs no write.
 */
export class Presence {
  readonly #devices = new Map<string, { orgId: string; count: number }>();

  constructor(private readonly sink: PresenceSink) {}

  /** Devices with at least one connection here. */
  get size(): number {
    return this.#devices.size;
  }

  has(deviceId: string): boolean {
    return this.#devices.has(deviceId);
  }

  add(deviceId: string, orgId: string): void {
    const d = this.#devices.get(deviceId);
    if (d) {
      d.count++;
      return;
    }
    this.#devices.set(deviceId, { orgId, count: 1 });
    this.sink.connected(deviceId, orgId);
  }

  remove(deviceId: string): void {
    const d = this.#devices.get(deviceId);
    if (!d) return;
    if (--d.count > 0) return;
    this.#devices.delete(deviceId);
    this.sink.disconnected(deviceId, d.orgId);
  }

  /** Tells the sink again about every connected device (this replica's rows were lost with its expired lease). */
  reassert(): void {
    for (const [id, d] of this.#devices) this.sink.connected(id, d.orgId);
  }
}
