/**
 * The part of a DataplaneDescription that follows from the last applied
 * desired state (secrets left out).
 */
import type { DataplaneDescription, DataplaneMode } from './dataplane.js';
import type { DesiredDataplane } from './desired-state.js';
import { publicKeyFromPrivate } from './keys.js';

export function describeDesired(
  mode: DataplaneMode,
  interfaceName: string,
  desired: DesiredDataplane | null,
  appliedAt: Date | null,
): DataplaneDescription {
  if (!desired) {
    return {
      mode,
      interface: interfaceName,
      applied: false,
      address: null,
      listen_port: null,
      public_key: null,
      peers: [],
      routes: [],
      firewall: null,
      applied_at: null,
    };
  }
  const fw = desired.firewall;
  return {
    mode,
    interface: interfaceName,
    applied: true,
    address: desired.interface.address,
    listen_port: desired.interface.listen_port,
    public_key: publicKeyFromPrivate(desired.interface.private_key),
    peers: desired.peers.map((p) => ({
      public_key: p.public_key,
      device_id: p.device_id,
      endpoint: p.endpoint,
      allowed_ips: [...p.allowed_ips],
      latest_handshake: null,
      rx_bytes: 0,
      tx_bytes: 0,
    })),
    routes: desired.routes.map((r) => (r.via === null ? r.destination : `${r.destination} via ${r.via}`)),
    firewall:
      fw.mode === 'allow-all'
        ? { mode: 'allow-all', security_group_id: null, inbound: [], outbound: [] }
        : { mode: 'filter', security_group_id: fw.security_group_id, inbound: fw.inbound, outbound: fw.outbound },
    applied_at: appliedAt ? appliedAt.toISOString() : null,
  };
}
