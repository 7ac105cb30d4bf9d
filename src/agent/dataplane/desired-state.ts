/**
 * The desired dataplane of one device, computed from the organization's
 * objects. Pure and deterministic: the same inputs (in any order) give a
 * structurally identical result, so renderings and diffs are stable.
 */
import type { DeviceObject, Organization, SecurityGroup } from '../../protocol/index.js';
import { canonicalCidr, canonicalIp, compareCidrs, hostCidr, parseIp } from './addresses.js';
import { peerCandidates } from './endpoint-choice.js';
import { chooseRelayDevice, needsRelay } from './relay-device.js';
import { desiredFirewall, type DesiredFirewall, type SkippedItem } from './desired-firewall.js';
import { kernelRoutes, type DesiredRoute } from './kernel-routes.js';
import { claimRoutes, subnetRoutes, type Claimant } from './route-claims.js';
import { isWireGuardKey } from './keys.js';
import { bindGroups } from './group-binding.js';

export type { AddressSet, DesiredFirewall, FirewallRule, FirewallProtocol, PortRange, SkippedItem } from './desired-firewall.js';

/** Default keepalive for peers with an endpoint, so NAT mappings stay open. */
export const DEFAULT_PERSISTENT_KEEPALIVE = 25;
export const DEFAULT_LISTEN_PORT = 51820;

export interface DesiredStateInput {
  deviceId: string;
  /** Linux interface name: 1..15 of `A-Z a-z 0-9 _ . -`. */
  interfaceName: string;
  privateKey: string;
  listenPort: number;
  organization: Organization;
  devices: readonly DeviceObject[];
  securityGroups: readonly SecurityGroup[];
  /** Seconds; 0 turns keepalives off. Default DEFAULT_PERSISTENT_KEEPALIVE. */
  persistentKeepalive?: number;
  /**
   * True when a path manager chooses each peer's endpoint (the linux
   * dataplane): peers then carry no endpoint, only their candidates, and
   * always the keepalive (a relayed peer needs it as much as a direct one).
   */
  pathManaged?: boolean;
}

export interface DesiredInterface {
  name: string;
  /** Secret: never log or report it. */
  private_key: string;
  /** The device's tunnel IP with the organization pool's prefix length, e.g. `100.64.0.2/16`. */
  address: string;
  mtu: number;
  listen_port: number;
  /** DNS servers of the organization, canonical text, in the organization's order. */
  resolvers: string[];
}

export interface DesiredPeer {
  device_id: string;
  hostname: string;
  public_key: string;
  /** Canonical CIDRs: the tunnel IP /32 first, then advertised and approved CIDRs sorted. */
  allowed_ips: string[];
  /**
   * Canonical `ip:port`/`[v6]:port`: the first candidate, or null when there
   * is none, or when a path manager owns the endpoint (`pathManaged`).
   */
  endpoint: string | null;
  /** Where the peer may be reached directly, in the order they are tried (see peerCandidates). */
  candidates: string[];
  /** Seconds, 0 = off. Set for peers with an endpoint, and for every peer when path-managed. */
  persistent_keepalive: number;
}

/** A device reached through the organization's relay device instead of as a peer of its own. */
export interface RelayedDevice {
  device_id: string;
  hostname: string;
  public_key: string;
  /** The relay device's id and public key (its peer carries this device's allowed IPs). */
  via_device_id: string;
  via_public_key: string;
}

export type { DesiredRoute } from './kernel-routes.js';

export interface DesiredDataplane {
  device_id: string;
  interface: DesiredInterface;
  /** One per other device (but those in `relayed`), sorted by device id. */
  peers: DesiredPeer[];
  /** Devices a NAT keeps from this one, reached through the relay device (sorted by device id). */
  relayed: RelayedDevice[];
  /** This device is the organization's relay device: it forwards between its WireGuard peers. */
  forwarding: boolean;
  /**
   * Kernel routes into the tunnel, sorted by destination: the network routes
   * and the routes peers serve, none inside this device's own (kernelRoutes).
   */
  routes: DesiredRoute[];
  /**
   * The routes this device serves (a subnet router), canonical and sorted:
   * its own requested and approved ones (claimRoutes, subnetRoutes). It
   * forwards traffic from the tunnel to them and masquerades it, so hosts
   * there need no route back to the tunnel pool.
   */
  subnet_routes: string[];
  firewall: DesiredFirewall;
  /** Inputs left out (invalid or conflicting), sorted; for logs and status. */
  skipped: SkippedItem[];
}

export class DesiredStateError extends Error {
  override name = 'DesiredStateError';
}

const INTERFACE_NAME = /^[A-Za-z0-9_.-]{1,15}$/;

export function isInterfaceName(text: string): boolean {
  return INTERFACE_NAME.test(text) && text !== '.' && text !== '..';
}

function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The peers, and which routes each device gets (claimRoutes), this device's own included. */
function computePeers(
  self: DeviceObject,
  devices: readonly DeviceObject[],
  keepalive: number,
  pathManaged: boolean,
  skipped: SkippedItem[],
): { peers: DesiredPeer[]; claims: Map<string, string[]> } {
  const others = devices.filter((d) => d.id !== self.id).sort((a, b) => byText(a.id, b.id));
  const usable: Claimant[] = [];
  const keys = new Set<string>([self.public_key]);
  for (const device of others) {
    const tunnel = hostCidr(device.tunnel_ip);
    if (!isWireGuardKey(device.public_key)) {
      skipped.push({ kind: 'peer', subject: device.id, reason: 'public_key is not a WireGuard key' });
    } else if (keys.has(device.public_key)) {
      skipped.push({ kind: 'peer', subject: device.id, reason: 'public_key already used by another device' });
    } else if (!tunnel || parseIp(device.tunnel_ip)?.family !== 4) {
      skipped.push({ kind: 'peer', subject: device.id, reason: 'tunnel_ip is not an IPv4 address' });
    } else {
      keys.add(device.public_key);
      usable.push({ device, tunnel });
    }
  }
  const ownTunnel = hostCidr(self.tunnel_ip);
  const claims = claimRoutes(ownTunnel ? [...usable, { device: self, tunnel: ownTunnel }] : usable, self.id, skipped);
  const peers: DesiredPeer[] = [];
  for (const { device, tunnel } of usable) {
    const candidates = peerCandidates(self, device, skipped);
    const endpoint = pathManaged ? null : (candidates[0] ?? null);
    peers.push({
      device_id: device.id,
      hostname: device.hostname,
      public_key: device.public_key,
      allowed_ips: [tunnel, ...[...(claims.get(device.id) ?? [])].sort(compareCidrs)],
      endpoint,
      candidates,
      persistent_keepalive: endpoint === null && !pathManaged ? 0 : keepalive,
    });
  }
  return { peers, claims };
}

/**
 * Pairs that no direct path can join (needsRelay) go through the relay
 * device when the organization has one: the other device is dropped as a
 * peer and its allowed IPs join the relay device's peer (WireGuard routes
 * each address to one peer), and the relay device forwards. Both ends
 * decide this from the same objects, so they agree.
 */
function throughRelayDevice(
  self: DeviceObject,
  devices: readonly DeviceObject[],
  peers: DesiredPeer[],
): { peers: DesiredPeer[]; relayed: RelayedDevice[]; forwarding: boolean } {
  const byId = new Map(devices.map((d) => [d.id, d]));
  const peerIds = new Set(peers.map((p) => p.device_id));
  const relay = chooseRelayDevice(devices, (d) => d.id === self.id || peerIds.has(d.id));
  if (!relay) return { peers, relayed: [], forwarding: false };
  if (relay.id === self.id) return { peers, relayed: [], forwarding: true };
  const hub = peers.find((p) => p.device_id === relay.id);
  if (!hub) return { peers, relayed: [], forwarding: false };
  const relayed: RelayedDevice[] = [];
  const kept: DesiredPeer[] = [];
  const moved: string[] = [];
  for (const peer of peers) {
    const device = byId.get(peer.device_id);
    if (peer !== hub && device && needsRelay(self, device)) {
      relayed.push({ device_id: peer.device_id, hostname: peer.hostname, public_key: peer.public_key, via_device_id: hub.device_id, via_public_key: hub.public_key });
      moved.push(...peer.allowed_ips);
    } else {
      kept.push(peer);
    }
  }
  if (relayed.length === 0) return { peers, relayed, forwarding: false };
  const [own, ...rest] = hub.allowed_ips;
  hub.allowed_ips = [...(own === undefined ? [] : [own]), ...[...new Set([...rest, ...moved])].sort(compareCidrs)];
  return { peers: kept, relayed, forwarding: false };
}

/** The prefixes a device requests, canonical (approved or not: either way they are its own networks). */
function requestedBy(device: DeviceObject): string[] {
  return device.advertise_cidrs.flatMap((cidr) => canonicalCidr(cidr) ?? []);
}

function compareSkipped(a: SkippedItem, b: SkippedItem): number {
  return byText(a.kind, b.kind) || byText(a.subject, b.subject) || byText(a.reason, b.reason);
}

/**
 * Computes the dataplane `input.deviceId` should have. Throws
 * DesiredStateError when the device itself is missing or unusable (bad
 * interface name, tunnel IP, pool or listen port); problems with other
 * objects only leave them out (listed in `skipped`).
 */
export function computeDesiredState(input: DesiredStateInput): DesiredDataplane {
  if (!isInterfaceName(input.interfaceName)) {
    throw new DesiredStateError(`invalid interface name ${JSON.stringify(input.interfaceName)}`);
  }
  if (!Number.isInteger(input.listenPort) || input.listenPort < 1 || input.listenPort > 65535) {
    throw new DesiredStateError(`invalid listen port ${input.listenPort}`);
  }
  const self = input.devices.find((d) => d.id === input.deviceId);
  if (!self) throw new DesiredStateError(`device ${input.deviceId} is not in the organization's device list`);
  const pool = canonicalCidr(input.organization.network.ipv4_cidr);
  const tunnel = canonicalIp(self.tunnel_ip);
  if (!pool || !tunnel || parseIp(tunnel)?.family !== 4) {
    throw new DesiredStateError(`device ${self.id} has no usable tunnel IP (${self.tunnel_ip} in ${input.organization.network.ipv4_cidr})`);
  }
  const skipped: SkippedItem[] = [];
  const keepalive = input.persistentKeepalive ?? DEFAULT_PERSISTENT_KEEPALIVE;
  const resolvers: string[] = [];
  for (const r of input.organization.network.resolvers) {
    const ip = canonicalIp(r);
    if (ip) resolvers.push(ip);
    else skipped.push({ kind: 'resolver', subject: r, reason: 'not an IP address' });
  }
  const { peers, claims } = computePeers(self, input.devices, keepalive, input.pathManaged === true, skipped);
  const served = [...claims].flatMap(([id, routes]) => (id === self.id ? [] : routes));
  const bound = bindGroups(input.organization, input.devices, input.securityGroups);
  const selfBound = bound.devices.find((d) => d.id === self.id) ?? self;
  const result: DesiredDataplane = {
    device_id: self.id,
    interface: {
      name: input.interfaceName,
      private_key: input.privateKey,
      address: `${tunnel}/${pool.split('/')[1] ?? '32'}`,
      mtu: input.organization.network.mtu,
      listen_port: input.listenPort,
      resolvers,
    },
    ...throughRelayDevice(self, input.devices, peers),
    routes: kernelRoutes({ network: input.organization.network, pool, served, own: requestedBy(self) }, skipped),
    subnet_routes: subnetRoutes(claims.get(self.id) ?? [], pool, skipped),
    firewall: desiredFirewall(selfBound.security_group_id, bound.devices, bound.groups, claims, skipped),
    skipped,
  };
  skipped.sort(compareSkipped);
  return result;
}
