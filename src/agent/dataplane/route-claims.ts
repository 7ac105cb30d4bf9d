/**
 * Which device each requested route goes to (docs/protocol.md "Routes"),
 * decided from the streamed objects alone, so that every agent, the
 * route's owner included, decides the same.
 */
import type { DeviceObject } from '../../protocol/index.js';
import { canonicalCidr, cidrContains, compareCidrs } from './addresses.js';
import type { SkippedItem } from './desired-firewall.js';

/** A device that takes part: its tunnel IP as a host CIDR (`100.64.0.2/32`). */
export interface Claimant {
  device: DeviceObject;
  tunnel: string;
}

/**
 * A device's approved routes, canonical. A route is applied only while the
 * device requests it and an admin approved it (issue 12): one device alone
 * can't draw other devices' traffic. Objects an older server wrote have no
 * `approved_cidrs`, so they approve nothing.
 */
function approvedSet(device: DeviceObject): Set<string> {
  const approved: readonly string[] | undefined = device.approved_cidrs;
  const set = new Set<string>();
  for (const cidr of approved ?? []) {
    const canonical = canonicalCidr(cidr);
    if (canonical) set.add(canonical);
  }
  return set;
}

function byId(a: Claimant, b: Claimant): number {
  return a.device.id < b.device.id ? -1 : a.device.id > b.device.id ? 1 : 0;
}

/**
 * The routes each claimant gets, by device id: canonical prefixes it
 * requests (`advertise_cidrs`) that are approved, in request order, its own
 * tunnel IP left out. WireGuard routes each address to exactly one peer, so
 * a prefix claimed twice would flap between peers on every apply: tunnel IPs
 * win, then the lowest device id. What is left out is added to `skipped`:
 * as `allowed-ip` for other devices, as `route` for `selfId`'s own.
 */
export function claimRoutes(claimants: readonly Claimant[], selfId: string, skipped: SkippedItem[]): Map<string, string[]> {
  const owner = new Map<string, string>();
  for (const { device, tunnel } of claimants) owner.set(tunnel, device.id);
  const claims = new Map<string, string[]>();
  for (const { device, tunnel } of [...claimants].sort(byId)) {
    const kind = device.id === selfId ? 'route' : 'allowed-ip';
    const approved = approvedSet(device);
    const mine: string[] = [];
    for (const cidr of device.advertise_cidrs) {
      const canonical = canonicalCidr(cidr);
      if (!canonical) {
        skipped.push({ kind, subject: `${device.id} ${cidr}`, reason: 'not a CIDR' });
        continue;
      }
      if (!approved.has(canonical)) {
        skipped.push({ kind, subject: `${device.id} ${canonical}`, reason: 'not approved' });
        continue;
      }
      const claimedBy = owner.get(canonical);
      if (claimedBy !== undefined && claimedBy !== device.id) {
        skipped.push({ kind, subject: `${device.id} ${canonical}`, reason: `already routed to ${claimedBy}` });
        continue;
      }
      owner.set(canonical, device.id);
      if (canonical !== tunnel && !mine.includes(canonical)) mine.push(canonical);
    }
    claims.set(device.id, mine);
  }
  return claims;
}

/**
 * The routes this device forwards to from the tunnel (its own claims,
 * sorted): not a default route (exit nodes are not supported), nor one
 * overlapping the tunnel pool (it would forward tunnel traffic back into
 * the tunnel). The server refuses approving either; an object from before
 * that check is left out here, listed in `skipped`.
 */
export function subnetRoutes(own: readonly string[], pool: string, skipped: SkippedItem[]): string[] {
  const kept: string[] = [];
  for (const cidr of own) {
    if (cidr.endsWith('/0')) skipped.push({ kind: 'route', subject: cidr, reason: 'is a default route: exit nodes are not supported' });
    else if (cidrContains(cidr, pool) || cidrContains(pool, cidr)) skipped.push({ kind: 'route', subject: cidr, reason: `overlaps the tunnel pool ${pool}` });
    else kept.push(cidr);
  }
  return kept.sort(compareCidrs);
}
