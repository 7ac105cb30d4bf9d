/**
 * The endpoints an agent tries for a peer, in order (docs/protocol.md
 * "Paths between peers"). WireGuard takes one endpoint per peer; the path
 * manager tries these one at a time, the render dataplane writes the first.
 */
import type { DeviceObject, Endpoint } from '../../protocol/index.js';
import { canonicalEndpoint } from './addresses.js';
import type { SkippedItem } from './desired-firewall.js';

/** The IP part of a device's first `stun` endpoint (its public address). */
export function publicIp(device: DeviceObject): string | undefined {
  for (const ep of device.endpoints) {
    if (ep.source !== 'stun') continue;
    const canonical = canonicalEndpoint(ep.address);
    if (canonical) return canonical.slice(0, canonical.lastIndexOf(':'));
  }
  return undefined;
}

/**
 * Whether a device is reachable without punching: it has a manual endpoint,
 * or its STUN mapping is one of its own addresses (no NAT in front of it),
 * so even a peer behind a symmetric NAT reaches it first.
 */
export function isOpen(device: DeviceObject): boolean {
  const local = new Set(device.endpoints.filter((e) => e.source === 'local').map((e) => canonicalEndpoint(e.address)));
  return device.endpoints.some((e) => e.source === 'manual' || (e.source === 'stun' && local.has(canonicalEndpoint(e.address))));
}

/**
 * The peer's candidate endpoints, canonical and without repeats:
 * 1. its local endpoints when both devices published the same public
 *    address (one NAT: its public mapping would need hairpinning, which few
 *    NATs do);
 * 2. its stun endpoint, unless either device has `symmetric_nat` (that
 *    address reaches only the STUN server, and a symmetric side's packets
 *    come from a port the peer can't know), or the peer is open (isOpen);
 * 3. its manual endpoints;
 * 4. its local endpoints when it published no stun endpoint.
 * Unparsable endpoints are reported in `skipped`.
 */
export function peerCandidates(self: DeviceObject, device: DeviceObject, skipped: SkippedItem[]): string[] {
  const mine = publicIp(self);
  const theirs = publicIp(device);
  const sameNat = mine !== undefined && mine === theirs;
  const out: string[] = [];
  const take = (source: Endpoint['source']): void => {
    for (const ep of device.endpoints) {
      if (ep.source !== source) continue;
      const canonical = canonicalEndpoint(ep.address);
      if (!canonical) skipped.push({ kind: 'endpoint', subject: `${device.id} ${ep.address}`, reason: 'not ip:port' });
      else if (!out.includes(canonical)) out.push(canonical);
    }
  };
  if (sameNat) take('local');
  if ((!self.symmetric_nat && !device.symmetric_nat) || isOpen(device)) take('stun');
  take('manual');
  if (theirs === undefined) take('local');
  return out;
}
