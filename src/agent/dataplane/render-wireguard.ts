/**
 * The desired WireGuard state as a wg-quick(8) configuration file.
 * Deterministic: equal desired states render to identical bytes.
 */
import type { DesiredDataplane, DesiredRoute } from './desired-state.js';

export const WIREGUARD_CONF_FILE = 'wireguard.conf';

/** Comment-safe text: hostnames come from clients and may hold anything. */
function commentText(text: string): string {
  return text.replace(/[^A-Za-z0-9_.:-]/g, '_').slice(0, 253);
}

function routeCommand(route: DesiredRoute): string {
  return `ip route replace ${route.destination}${route.via === null ? '' : ` via ${route.via}`} dev %i`;
}

/**
 * Renders wg-quick text. It contains the private key: whoever writes it must
 * keep it private (mode 0600). `Table = off` because the agent routes only
 * the organization's routes (as PostUp lines), not every peer's AllowedIPs.
 */
export function renderWireGuard(desired: DesiredDataplane): string {
  const iface = desired.interface;
  const lines = [
    `# fleetplane: WireGuard configuration of device ${desired.device_id} (wg-quick format). Generated; do not edit.`,
    '[Interface]',
    `PrivateKey = ${iface.private_key}`,
    `Address = ${iface.address}`,
    `ListenPort = ${iface.listen_port}`,
    `MTU = ${iface.mtu}`,
  ];
  if (iface.resolvers.length > 0) lines.push(`DNS = ${iface.resolvers.join(', ')}`);
  lines.push('Table = off');
  for (const route of desired.routes) lines.push(`PostUp = ${routeCommand(route)}`);
  for (const peer of desired.peers) {
    lines.push('', '[Peer]', `# ${commentText(peer.hostname)} (${peer.device_id})`);
    lines.push(`PublicKey = ${peer.public_key}`, `AllowedIPs = ${peer.allowed_ips.join(', ')}`);
    if (peer.endpoint !== null) lines.push(`Endpoint = ${peer.endpoint}`);
    if (peer.persistent_keepalive > 0) lines.push(`PersistentKeepalive = ${peer.persistent_keepalive}`);
  }
  return `${lines.join('\n')}\n`;
}
