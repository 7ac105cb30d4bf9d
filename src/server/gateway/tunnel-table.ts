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
  /** One tunnel per device is the rule: it is kept bare, a list only while a device holds several. */
  readonly #byDevice = new Map<string, ServerTunnel | ServerTunnel[]>();
  #size = 0;
  readonly #removeClosed = (t: ServerTunnel): void => this.remove(t);

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

  #list(deviceId: string): readonly ServerTunnel[] | undefined {
    const held = this.#byDevice.get(deviceId);
    return held === undefined || Array.isArray(held) ? held : [held];
  }

  /** Adds an open tunnel; it leaves the table by itself when it closes (its `onClosed`). */
  add(tunnel: ServerTunnel): void {
    const held = this.#byDevice.get(tunnel.deviceId);
    const list = held === undefined ? [tunnel] : Array.isArray(held) ? [...held, tunnel] : [held, tunnel];
    this.#byDevice.set(tunnel.deviceId, list.length === 1 ? tunnel : list);
    this.#size++;
    this.onChange({ type: 'opened', tunnel });
    tunnel.onClosed = this.#removeClosed;
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
    const list = this.#list(deviceId)?.filter((t) => !exclude?.has(t));
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
    const list = this.#list(tunnel.deviceId);
    if (!list?.includes(tunnel)) return;
    const rest = list.filter((t) => t !== tunnel);
    const [only] = rest;
    if (only === undefined) this.#byDevice.delete(tunnel.deviceId);
    else this.#byDevice.set(tunnel.deviceId, rest.length === 1 ? only : rest);
    this.#size--;
    this.onChange({ type: 'closed', tunnel });
  }
}
