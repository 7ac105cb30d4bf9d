/**
 * The difference between desired peers and the peers an interface has, as
 * `wg set` arguments. Pure. Peers that already match get no command, so
 * their sessions are left alone.
 */
import { canonicalCidr } from './addresses.js';
import type { DesiredPeer } from './desired-state.js';
import type { WgPeerState } from './wg-dump.js';

/** One peer's change; `args` is its part of a `wg set` command (`peer <key> …`). */
export interface PeerChange {
  kind: 'add' | 'update' | 'remove';
  public_key: string;
  args: string[];
}

/** Peers per `wg set` command, which bounds the argument list. */
export const PEERS_PER_COMMAND = 64;

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const norm = (xs: readonly string[]): string => [...new Set(xs.map((x) => canonicalCidr(x) ?? x))].sort().join(',');
  return norm(a) === norm(b);
}

/**
 * Endpoint rule: set it when the peer is new, has none, or its desired
 * endpoint differs from the one this agent last set (`lastSetEndpoints`,
 * keyed by public key). Otherwise an endpoint the peer roamed to (WireGuard
 * learns it from authenticated packets) is left alone instead of being
 * reset on every apply.
 */
export function planPeerChanges(
  desired: readonly DesiredPeer[],
  current: readonly WgPeerState[],
  lastSetEndpoints: ReadonlyMap<string, string>,
): PeerChange[] {
  const wanted = new Map(desired.map((p) => [p.public_key, p]));
  const removals: PeerChange[] = [];
  const changes: PeerChange[] = [];
  const have = new Map<string, WgPeerState>();
  for (const peer of current) {
    have.set(peer.public_key, peer);
    if (!wanted.has(peer.public_key)) {
      removals.push({ kind: 'remove', public_key: peer.public_key, args: ['peer', peer.public_key, 'remove'] });
    }
  }
  for (const peer of desired) {
    const now = have.get(peer.public_key);
    const args: string[] = [];
    if (peer.endpoint !== null) {
      const stale = now === undefined || now.endpoint === null || lastSetEndpoints.get(peer.public_key) !== peer.endpoint;
      if (stale && now?.endpoint !== peer.endpoint) args.push('endpoint', peer.endpoint);
    }
    const keepaliveChanged =
      now === undefined ? peer.persistent_keepalive > 0 : now.persistent_keepalive !== peer.persistent_keepalive;
    if (keepaliveChanged) {
      args.push('persistent-keepalive', peer.persistent_keepalive === 0 ? 'off' : String(peer.persistent_keepalive));
    }
    if (now === undefined || !sameSet(now.allowed_ips, peer.allowed_ips)) {
      args.push('allowed-ips', peer.allowed_ips.join(','));
    }
    if (now === undefined) changes.push({ kind: 'add', public_key: peer.public_key, args: ['peer', peer.public_key, ...args] });
    else if (args.length > 0) changes.push({ kind: 'update', public_key: peer.public_key, args: ['peer', peer.public_key, ...args] });
  }
  // Removals first: they free allowed IPs that another peer may be about to take.
  return [...removals, ...changes];
}

/** Groups changes into `wg set <interface> …` argument lists of at most PEERS_PER_COMMAND peers. */
export function peerCommands(interfaceName: string, changes: readonly PeerChange[]): string[][] {
  const commands: string[][] = [];
  for (let i = 0; i < changes.length; i += PEERS_PER_COMMAND) {
    commands.push(['set', interfaceName, ...changes.slice(i, i + PEERS_PER_COMMAND).flatMap((c) => c.args)]);
  }
  return commands;
}
