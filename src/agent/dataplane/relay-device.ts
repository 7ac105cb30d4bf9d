/**
 * Relay devices (`relay: true`, docs/protocol.md "Paths between peers"):
 * which pairs of an organization's devices go through one, decided from the
 * streamed state alone so that both ends of a pair (and the relay device)
 * decide the same.
 */
import type { DeviceObject } from '../../protocol/index.js';
import { isOpen, publicIp } from './endpoint-choice.js';

function byAge(a: DeviceObject, b: DeviceObject): number {
  return a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * The organization's relay device: the oldest device with `relay: true`
 * that everyone reaches without punching (isOpen) and that isn't behind a
 * symmetric NAT; undefined when there is none. `usable` says which devices
 * the caller could make a peer of (valid key and tunnel IP).
 */
export function chooseRelayDevice(devices: readonly DeviceObject[], usable: (d: DeviceObject) => boolean): DeviceObject | undefined {
  return devices.filter((d) => d.relay && !d.symmetric_nat && isOpen(d) && usable(d)).sort(byAge)[0];
}

/**
 * Whether no direct path can exist between two devices: a symmetric NAT on
 * either side, no public address in common, and neither reachable without
 * punching.
 */
export function needsRelay(a: DeviceObject, b: DeviceObject): boolean {
  if (!a.symmetric_nat && !b.symmetric_nat) return false;
  const shared = publicIp(a);
  if (shared !== undefined && shared === publicIp(b)) return false;
  return !isOpen(a) && !isOpen(b);
}
