import { Type, type Static } from '@sinclair/typebox';
import { ChangeListOf, Cidr, OrNull, Revision, Timestamp, Uuid, strict } from './common.js';
import { TAG_PATTERN } from '../references.js';
import { MAX_REPORTED_PEERS } from '../device.js';

export const Endpoint = Type.Object(
  {
    source: Type.Union([Type.Literal('local'), Type.Literal('stun'), Type.Literal('manual')]),
    address: Type.String({ format: 'endpoint', description: 'ip:port or [ipv6]:port' }),
  },
  { ...strict, $id: 'Endpoint' },
);

/** One peer's path as its agent reports it (docs/protocol.md "Path reports"). */
export const PeerPath = Type.Object(
  {
    public_key: Type.String({ format: 'wireguard-key' }),
    device_id: OrNull(Type.String({ maxLength: 64 })),
    path: Type.Union([Type.Literal('direct'), Type.Literal('relay'), Type.Literal('none')]),
    /** `server` on the server relay, `device:<id>` through a relay device; null on a direct path. */
    via: OrNull(Type.String({ maxLength: 80, pattern: '^(server|device:[0-9A-Za-z-]{1,64})$' })),
    /** The replica holding the agent's relay session when `via` is `server`. */
    relay_id: OrNull(Type.String({ maxLength: 64 })),
    endpoint: OrNull(Type.String({ maxLength: 64 })),
    latest_handshake: OrNull(Timestamp),
    rx_bytes: Type.Integer({ minimum: 0 }),
    tx_bytes: Type.Integer({ minimum: 0 }),
  },
  { ...strict, $id: 'PeerPath' },
);
export type PeerPath = Static<typeof PeerPath>;

export const DeviceStatus = Type.Object({
  online: Type.Boolean(),
  last_seen: OrNull(Timestamp),
  applied_revision: OrNull(Revision),
  apply_error: OrNull(Type.String()),
  local_endpoints: Type.Array(Type.String()),
  os: OrNull(Type.String()),
  agent_version: OrNull(Type.String()),
  peers: Type.Array(PeerPath, { description: 'The path to each peer, as the device last reported it (empty before its first report, or from agents before v1.9).' }),
  peers_truncated: Type.Boolean({ description: 'The device had more peers than a status carries (1,024): the most recently active are listed.' }),
}, { $id: 'DeviceStatus', description: "The device's observed state, written only by the device itself." });

/**
 * What a device PUTs to `.../status`, and a tunnel status frame carries. The
 * server records its own clock as `last_seen`.
 */
export const DeviceStatusInput = Type.Object(
  {
    online: Type.Optional(Type.Boolean()),
    last_seen: Type.Optional(Timestamp),
    applied_revision: OrNull(Revision),
    apply_error: OrNull(Type.String({ maxLength: 4096 })),
    local_endpoints: Type.Array(Type.String({ maxLength: 64 }), { maxItems: 64 }),
    os: OrNull(Type.String({ maxLength: 256 })),
    agent_version: OrNull(Type.String({ maxLength: 64 })),
    /** The path to each peer (absent from agents before v1.9). */
    peers: Type.Optional(Type.Array(PeerPath, { maxItems: MAX_REPORTED_PEERS })),
    peers_truncated: Type.Optional(Type.Boolean()),
  },
  { ...strict, $id: 'DeviceStatusInput' },
);

const Hostname = Type.String({ minLength: 1, maxLength: 253 });
const PublicKey = Type.String({ format: 'wireguard-key', description: 'WireGuard public key: 32 bytes, base64.' });
const Endpoints = Type.Array(Endpoint, { maxItems: 32 });
const SecurityGroupRef = OrNull(Uuid);

/** A device's tags (`tag:<name>`), at most 64; the server stores them sorted, without repeats. */
export const Tags = Type.Array(Type.String({ pattern: TAG_PATTERN, maxLength: 67 }), { maxItems: 64 });

/** A device as the watch stream carries it: spec and server-assigned fields, no status. */
export const DeviceObject = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  hostname: Type.String(),
  public_key: Type.String(),
  advertise_cidrs: Type.Array(Type.String()),
  approved_cidrs: Type.Array(Type.String()),
  endpoints: Type.Array(Endpoint),
  relay: Type.Boolean(),
  symmetric_nat: Type.Boolean(),
  security_group_id: SecurityGroupRef,
  tags: Type.Array(Type.String(), { description: 'Sorted, without repeats; what `tag:<name>` references in rules select (docs/protocol.md "Tags and references").' }),
  tunnel_ip: Type.String(),
  ephemeral: Type.Boolean({ description: 'Enrolled with an ephemeral registration key: deleted once offline longer than the server\'s --ephemeral-offline-timeout. Set by the server.' }),
  revision: Revision,
  created_at: Timestamp,
  updated_at: Timestamp,
}, { $id: 'DeviceObject', description: 'A device as watch streams carry it: spec and server-assigned fields, no status.' });

/** A device as REST returns it: the watch form plus its observed `status`. */
export const Device = Type.Composite([DeviceObject, Type.Object({ status: DeviceStatus })], { $id: 'Device' });

/** `GET .../devices`: devices, and tombstones with `gt_revision` or a cursor. */
export const DeviceList = ChangeListOf(Device, 'DeviceList');

export const DeviceCreate = Type.Object(
  {
    hostname: Hostname,
    public_key: PublicKey,
    advertise_cidrs: Type.Optional(Type.Array(Cidr, { maxItems: 256, description: "Routes the device requests; agents apply only those also in approved_cidrs." })),
    approved_cidrs: Type.Optional(Type.Array(Cidr, { maxItems: 256, description: 'Routes an organization admin approved (docs/protocol.md "Routes").' })),
    endpoints: Type.Optional(Endpoints),
    relay: Type.Optional(Type.Boolean()),
    symmetric_nat: Type.Optional(Type.Boolean()),
    security_group_id: Type.Optional(SecurityGroupRef),
    tags: Type.Optional(Tags),
  },
  { ...strict, $id: 'DeviceCreate' },
);

export const DevicePatch = Type.Partial(DeviceCreate, { ...strict, $id: 'DevicePatch' });

export const EnrolledDevice = Type.Composite(
  [
    Device,
    Type.Object({
      device_token: Type.String({ description: 'Shown once.' }),
      device_token_expires_at: OrNull(Timestamp, { description: 'When the device token expires (null: never); the agent renews it before.' }),
    }),
  ],
  { $id: 'EnrolledDevice' },
);

export type Endpoint = Static<typeof Endpoint>;
export type DeviceStatus = Static<typeof DeviceStatus>;
export type DeviceStatusInput = Static<typeof DeviceStatusInput>;
export type DeviceObject = Static<typeof DeviceObject>;
export type Device = Static<typeof Device>;
export type DeviceCreate = Static<typeof DeviceCreate>;
export type DevicePatch = Static<typeof DevicePatch>;
export type EnrolledDevice = Static<typeof EnrolledDevice>;
