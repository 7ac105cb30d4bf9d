/**
 * The desired WireGuard state as a wg-quick(8) configuration file.
 * Deterministic: equal desired states render to identical bytes.
 */
import type { DesiredDataplane, DesiredRoute } from './desired-state.js';
import {
  cidr,
  comment,
  endpoint,
  fileOf,
  integer,
  interfaceAddress,
  ip,
  joined,
  line,
  mtu,
  port,
  uuid,
  wireGuardKey,
  type Line,
} from './rendered-text.js';

export const WIREGUARD_CONF_FILE = 'wireguard.conf';

/** wg-quick runs PostUp lines as root through a shell: each is built from a canonical CIDR and IP only. */
function routeLine(route: DesiredRoute): Line {
  const destination = cidr(route.destination, 'route destination');
  if (route.via === null) return line`PostUp = ip route replace ${destination} dev %i`;
  return line`PostUp = ip route replace ${destination} via ${ip(route.via, 'route gateway')} dev %i`;
}

/**
 * Renders wg-quick text. It contains the private key: whoever writes it must
 * keep it private (mode 0600). `Table = off` because the agent routes only
 * its desired routes (the organization's and those peers serve, as PostUp
 * lines), not every peer's AllowedIPs.
 * Throws RenderValueError when a value is not of its type (rendered-text.ts):
 * no value can add a line or a key.
 */
export function renderWireGuard(desired: DesiredDataplane): string {
  const iface = desired.interface;
  const lines: Line[] = [
    line`# fleetplane: WireGuard configuration of device ${uuid(desired.device_id, 'device id')} (wg-quick format). Generated; do not edit.`,
    line`[Interface]`,
    line`PrivateKey = ${wireGuardKey(iface.private_key, 'private key')}`,
    line`Address = ${interfaceAddress(iface.address, 'interface address')}`,
    line`ListenPort = ${port(iface.listen_port, 'listen port')}`,
    line`MTU = ${mtu(iface.mtu)}`,
  ];
  if (iface.resolvers.length > 0) lines.push(line`DNS = ${joined(iface.resolvers.map((r) => ip(r, 'resolver')), ', ')}`);
  lines.push(line`Table = off`);
  for (const route of desired.routes) lines.push(routeLine(route));
  for (const peer of desired.peers) {
    lines.push(line``, line`[Peer]`, line`# ${comment(peer.hostname)} (${uuid(peer.device_id, 'peer device id')})`);
    lines.push(
      line`PublicKey = ${wireGuardKey(peer.public_key, 'peer public key')}`,
      line`AllowedIPs = ${joined(peer.allowed_ips.map((a) => cidr(a, 'allowed IP')), ', ')}`,
    );
    if (peer.endpoint !== null) lines.push(line`Endpoint = ${endpoint(peer.endpoint, 'peer endpoint')}`);
    if (peer.persistent_keepalive !== 0) lines.push(line`PersistentKeepalive = ${integer(peer.persistent_keepalive, 1, 65535, 'persistent keepalive')}`);
  }
  return fileOf(lines);
}
