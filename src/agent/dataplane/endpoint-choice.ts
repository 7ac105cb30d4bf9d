/**
 * Which of a peer's published endpoints this agent gives WireGuard (one per
 * peer: WireGuard takes one endpoint and roams from there).
 */
import type { DeviceObject, Endpoint } from '../../protocol/index.js';
import { canonicalEndpoint } from './addresses.js';
import type { SkippedItem } from './desired-firewall.js';

const PREFERENCE: readonly Endpoint['source'][] = ['manual', 'stun', 'local'];
/** Two devices behind one NAT: its public mapping would need hairpinning, which few NATs do. */
const SAME_NAT_PREFERENCE: readonly Endpoint['source'][] = ['local', 'manual', 'stun'];

/** The IP part of a device's first `stun` endpoint (its public address). */
function publicIp(device: DeviceObject): string | undefined {
  for (const ep of device.endpoints) {
    if (ep.source !== 'stun') continue;
    const canonical = canonicalEndpoint(ep.address);
    if (canonical) return canonical.slice(0, canonical.lastIndexOf(':'));
  }
  return undefined;
}

/**
 * The peer's endpoint, canonical, or null when it has none usable: the first
 * by source, manual, then stun, then local; local first when both devices
 * published the same public address (they share a NAT). A `stun` endpoint of
 * a device with `symmetric_nat` is never chosen: its NAT maps each
 * destination to another port, so that address reaches nobody but the STUN
 * server. Unparsable endpoints are reported in `skipped`.
 */
export function chooseEndpoint(self: DeviceObject, device: DeviceObject, skipped: SkippedItem[]): string | null {
  const mine = publicIp(self);
  const order = mine !== undefined && mine === publicIp(device) ? SAME_NAT_PREFERENCE : PREFERENCE;
  for (const source of order) {
    if (source === 'stun' && device.symmetric_nat) continue;
    for (const ep of device.endpoints) {
      if (ep.source !== source) continue;
      const canonical = canonicalEndpoint(ep.address);
      if (canonical) return canonical;
      skipped.push({ kind: 'endpoint', subject: `${device.id} ${ep.address}`, reason: 'not ip:port' });
    }
  }
  return null;
}
