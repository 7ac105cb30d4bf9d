import type { DeviceStatus } from './schemas/device.js';

/** `via` of a peer reached through the server relay. */
export const PEER_VIA_SERVER = 'server';
const VIA_DEVICE = 'device:';

/** The id of the relay device a peer's `via` names (`device:<id>`); undefined for the server relay or no relay. */
export function relayDeviceOf(via: string | null): string | undefined {
  return via !== null && via.startsWith(VIA_DEVICE) ? via.slice(VIA_DEVICE.length) : undefined;
}

/** Most peers one status reports; the rest are left out and `peers_truncated` is true. */
export const MAX_REPORTED_PEERS = 1024;

/**
 * Fields a device token may PATCH on its own device: what the device itself
 * discovers, and its route request (`advertise_cidrs`), which no agent applies
 * until an admin approves it.
 */
export const DEVICE_SELF_FIELDS = ['advertise_cidrs', 'endpoints', 'hostname', 'symmetric_nat'] as const;

/**
 * Fields an enrollment (a registration key) may set. `relay`,
 * `security_group_id`, `approved_cidrs` and `tags` decide what other devices
 * send to this one, so only an organization admin sets them (issue 12); a
 * device enrolled by a key gets the key's tags.
 */
export const ENROLLMENT_FIELDS = ['advertise_cidrs', 'endpoints', 'hostname', 'public_key', 'symmetric_nat'] as const;

/**
 * Fields a device request must not set, and the endpoint that owns each
 * (docs/protocol.md "Field ownership"). `{org}` and `{id}` are filled in.
 */
export const DEVICE_OWNED_FIELDS: Readonly<Record<string, string>> = {
  tunnel_ip: 'the server (assigned from PATCH /api/organizations/{org} network.ipv4_cidr)',
  ephemeral: 'the server (from the registration key the device enrolled with)',
  organization_id: 'the server (the organization in the path)',
  revision: 'the server (revisions are assigned on write)',
  mtu: 'PATCH /api/organizations/{org} (network.mtu)',
  resolvers: 'PATCH /api/organizations/{org} (network.resolvers)',
  routes: 'PATCH /api/organizations/{org} (network.routes)',
  status: 'PUT /api/organizations/{org}/devices/{id}/status',
};

/** The status of a device that has not reported yet. */
export const EMPTY_STATUS: DeviceStatus = {
  online: false,
  last_seen: null,
  applied_revision: null,
  apply_error: null,
  local_endpoints: [],
  os: null,
  agent_version: null,
  peers: [],
  peers_truncated: false,
};
