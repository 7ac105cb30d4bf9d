import { TUNNEL_CLOSE_CODES } from '../../protocol/index.js';
import type { ServerTunnel } from './server-tunnel.js';

/** A change of a device's tunnels on this replica. */
export type TunnelChange = { readonly type: 'opened' | 'closed'; readonly tunnel: ServerTunnel };

/**
 * This replica's open tunnels by device. A device may hold several (an agent
 * replacing an aged connection holds two for a while); at most
 * `maxPerDevice`: a further one closes the oldest. Each request goes to
 * exactly one tunnel: the one with the fewest pending requests.
 */
export class TunnelTable {
  readonly #byDevice = new Map<string, ServerTunnel[]>();
  #size = 0;

  constructor(
    private readonly maxPerDevice: number,
    private readonly onChange: (change: TunnelChange) => void,
  ) {}

  /** Tunnels open on this replica. */
  get size(): number {
    return this.#size;
  }

  has(deviceId: string): boolean {
    return this.#byDevice.has(deviceId);
  }

  /** Devices with at least one tunnel here. */
  devices(): string[] {
    return [...this.#byDevice.keys()];
  }

  all(): ServerTunnel[] {
    return [...this.#byDevice.values()].flat();
  }

  /** Adds an open tunnel; it leaves the table by itself when it closes. */
  add(tunnel: ServerTunnel): void {
    const list = this.#byDevice.get(tunnel.deviceId) ?? [];
    this.#byDevice.set(tunnel.deviceId, list);
    list.push(tunnel);
    this.#size++;
    this.onChange({ type: 'opened', tunnel });
    void tunnel.closed.then(() => this.remove(tunnel));
    const open = list.filter((t) => t.open);
    if (open.length > this.maxPerDevice) open[0]?.close(TUNNEL_CLOSE_CODES.tooManyTunnels, 'too many tunnels for this device');
  }

  /**
   * The tunnel a request should use: an open one with room, the least
   * loaded, the newest among equals (an agent replacing an aged tunnel stops
   * starting requests on the old one). 'busy' when every tunnel of the device is full; undefined when
   * the device has none here (tunnels in `exclude` don't count).
   */
  pick(deviceId: string, exclude?: ReadonlySet<ServerTunnel>): ServerTunnel | 'busy' | undefined {
    const list = this.#byDevice.get(deviceId)?.filter((t) => !exclude?.has(t));
    if (!list) return undefined;
    let best: ServerTunnel | undefined;
    for (const t of list) {
      if (!t.open || t.full) continue;
      if (!best || t.pending <= best.pending) best = t;
    }
    if (best) return best;
    return list.some((t) => t.open) ? 'busy' : undefined;
  }

  private remove(tunnel: ServerTunnel): void {
    const list = this.#byDevice.get(tunnel.deviceId);
    const i = list ? list.indexOf(tunnel) : -1;
    if (!list || i < 0) return;
    list.splice(i, 1);
    if (list.length === 0) this.#byDevice.delete(tunnel.deviceId);
    this.#size--;
    this.onChange({ type: 'closed', tunnel });
  }
}
