/**
 * The kernel routes an agent adds into its tunnel (docs/protocol.md
 * "Routes"): the organization's network routes, and every route a peer
 * serves (requested and approved, see claimRoutes), so an approved route is
 * reachable without a network route of its own. WireGuard's allowed IPs
 * then pick the peer; a route no peer serves has no peer to go to.
 */
import type { Network } from '../../protocol/index.js';
import { canonicalCidr, canonicalIp, cidrContains, compareCidrs, parseIp } from './addresses.js';
import type { SkippedItem } from './desired-firewall.js';

/** A route via the tunnel interface; `via` optional gateway. Destination is canonical. */
export interface DesiredRoute {
  destination: string;
  via: string | null;
}

export interface KernelRoutesInput {
  network: Network;
  /** The tunnel pool, canonical. */
  pool: string;
  /** Canonical prefixes peers serve (each in one peer's allowed IPs). */
  served: readonly string[];
  /** Canonical prefixes this device requests itself: its own networks, never routed into its tunnel. */
  own: readonly string[];
}

function networkRoutes(network: Network, pool: string, routes: Map<string, DesiredRoute>, skipped: SkippedItem[]): void {
  for (const route of network.routes) {
    const destination = canonicalCidr(route.destination);
    const via = route.via === undefined ? null : canonicalIp(route.via);
    if (!destination) {
      skipped.push({ kind: 'route', subject: route.destination, reason: 'destination is not a CIDR' });
    } else if (via === undefined) {
      skipped.push({ kind: 'route', subject: route.destination, reason: 'via is not an IP address' });
    } else if (via !== null && parseIp(via)?.family !== parseIp(destination.split('/')[0] ?? '')?.family) {
      skipped.push({ kind: 'route', subject: route.destination, reason: 'via is of another address family' });
    } else if (destination === pool) {
      // The interface address already routes the pool; replacing that kernel route would break the tunnel.
      skipped.push({ kind: 'route', subject: route.destination, reason: 'is the tunnel pool itself' });
    } else if (routes.has(destination)) {
      skipped.push({ kind: 'route', subject: route.destination, reason: 'duplicate destination' });
    } else {
      routes.set(destination, { destination, via });
    }
  }
}

/**
 * The routes, sorted by destination. A network route and a served route to
 * the same destination are one route, the network route's (its `via`
 * wins). A served default route is left out (exit nodes are not supported:
 * it would carry the tunnel's own packets), and so is any route inside one
 * of `own` (this device's own network is reached without the tunnel; a
 * kernel route into the tunnel would take its place). Left out routes are
 * added to `skipped`.
 */
export function kernelRoutes(input: KernelRoutesInput, skipped: SkippedItem[]): DesiredRoute[] {
  const routes = new Map<string, DesiredRoute>();
  networkRoutes(input.network, input.pool, routes, skipped);
  for (const destination of [...new Set(input.served)].sort(compareCidrs)) {
    if (routes.has(destination)) continue;
    if (destination.endsWith('/0')) skipped.push({ kind: 'route', subject: destination, reason: 'is a default route: exit nodes are not supported' });
    else if (destination === input.pool) skipped.push({ kind: 'route', subject: destination, reason: 'is the tunnel pool itself' });
    else routes.set(destination, { destination, via: null });
  }
  for (const destination of [...routes.keys()]) {
    const mine = input.own.find((own) => cidrContains(own, destination));
    if (mine === undefined) continue;
    routes.delete(destination);
    skipped.push({ kind: 'route', subject: destination, reason: `inside ${mine}, a route this device requests itself` });
  }
  return [...routes.values()].sort((a, b) => compareCidrs(a.destination, b.destination));
}
