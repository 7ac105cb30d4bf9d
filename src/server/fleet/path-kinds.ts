import type { PeerPath } from '../../protocol/index.js';

/** How a device reaches its peers, as `fleetplane_devices_by_path{kind}` counts it: the values of a peer's `path`. */
export type PathKind = PeerPath['path'];
export const PATH_KINDS: readonly PathKind[] = ['direct', 'relay', 'none'];

/**
 * A device's kind from the peers it reported (docs/protocol.md "Path
 * reports"): `relay` when any peer is relayed; else `direct` when any peer
 * is direct (a path is direct only once a handshake completed on it); else
 * `none` (no peer with a handshake on its current path, or no peers).
 */
export function pathKindOf(peers: readonly PeerPath[] | undefined): PathKind {
  if (peers === undefined) return 'none';
  let direct = false;
  for (const p of peers) {
    if (p.path === 'relay') return 'relay';
    if (p.path === 'direct') direct = true;
  }
  return direct ? 'direct' : 'none';
}

/**
 * The kind of each device this replica follows, and how many devices have
 * each kind. Contract: `set` and `delete` are O(1) and keep the counts
 * equal to the number of devices of each kind, so reading them at scrape
 * time costs nothing per device.
 */
export class PathKinds {
  readonly #kinds = new Map<string, PathKind>();
  readonly #counts: Record<PathKind, number> = { direct: 0, relay: 0, none: 0 };

  set(deviceId: string, kind: PathKind): void {
    const before = this.#kinds.get(deviceId);
    if (before === kind) return;
    if (before !== undefined) this.#counts[before]--;
    this.#kinds.set(deviceId, kind);
    this.#counts[kind]++;
  }

  delete(deviceId: string): void {
    const before = this.#kinds.get(deviceId);
    if (before === undefined) return;
    this.#kinds.delete(deviceId);
    this.#counts[before]--;
  }

  /** Devices of `kind`. */
  count(kind: PathKind): number {
    return this.#counts[kind];
  }
}
