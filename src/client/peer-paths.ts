import { PEER_VIA_SERVER, relayDeviceOf, type DeviceObject, type PeerPath } from '../protocol/wire.js';

/** A device of the organization, as a peer's name. */
export interface NamedDevice {
  readonly id: string;
  readonly hostname: string;
}

/**
 * The hostnames of an organization's devices, to name the peers a device
 * reports (docs/protocol.md "Path reports"): by the peer's `device_id`,
 * else by its public key. Only the organization's own devices are looked
 * up, so a peer never borrows a name from elsewhere.
 */
export class PeerNames {
  readonly #byId = new Map<string, NamedDevice>();
  readonly #byKey = new Map<string, NamedDevice>();

  constructor(devices: Iterable<Pick<DeviceObject, 'id' | 'hostname' | 'public_key'>>) {
    for (const d of devices) {
      const named = { id: d.id, hostname: d.hostname };
      this.#byId.set(d.id, named);
      this.#byKey.set(d.public_key, named);
    }
  }

  /** The organization's device the peer is; undefined when none is. */
  deviceOf(peer: Pick<PeerPath, 'device_id' | 'public_key'>): NamedDevice | undefined {
    return (peer.device_id === null ? undefined : this.#byId.get(peer.device_id)) ?? this.#byKey.get(peer.public_key);
  }

  /** The peer's hostname; undefined when no device of the organization is that peer. */
  hostnameOf(peer: Pick<PeerPath, 'device_id' | 'public_key'>): string | undefined {
    return this.deviceOf(peer)?.hostname;
  }

  /**
   * The peer's path in words: `direct`, `none`, `relay via server`, or
   * `relay via <hostname>` (the relay device's id when it is unknown).
   */
  pathOf(peer: Pick<PeerPath, 'path' | 'via'>): string {
    if (peer.path !== 'relay' || peer.via === null) return peer.path;
    if (peer.via === PEER_VIA_SERVER) return 'relay via server';
    const device = relayDeviceOf(peer.via);
    return device === undefined ? `relay via ${peer.via}` : `relay via ${this.#byId.get(device)?.hostname ?? device}`;
  }
}

const BYTE_UNITS = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/** A byte count for people, in binary units: `512 B`, `1.5 KiB`, `12 MiB` (three significant digits at most). */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n) || n < 1024) return `${Math.max(0, Math.round(n))} B`;
  let value = n;
  let unit = 'B';
  for (const u of BYTE_UNITS) {
    if (value < 1024) break;
    value /= 1024;
    unit = u;
  }
  const text = value >= 100 ? String(Math.round(value)) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
  // 1.50 KiB reads as 1.5 KiB; 2.00 MiB as 2 MiB.
  return `${text.includes('.') ? text.replace(/\.?0+$/, '') : text} ${unit}`;
}
