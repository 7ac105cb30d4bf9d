import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/index.js';
import { pgConstraint, pgErrorCode, UNIQUE_VIOLATION } from '../db/index.js';
import type { SignalBus } from '../bus/index.js';
import {
  EMPTY_STATUS,
  formatIpv4,
  SECRET_PREFIX,
  type Device,
  type DeviceCreate,
  type DeviceObject,
  type DevicePatch,
  type DeviceStatus,
  type DeviceStatusInput,
  type Organization,
} from '../../protocol/index.js';
import { ApiError, notFound, validationFailed } from '../errors.js';
import { checkIfMatch, getObject, insertObject, lockObject, tombstoneObject, updateObject, type StoredValue } from './objects.js';
import { writeInOrg, type OrgWrite } from './org-write.js';
import { sameJson } from './same-json.js';
import { releaseTunnelIp, takeTunnelIp } from './tunnel-ips.js';
import { hashSecret, newSecret } from './secrets.js';

const KIND = 'device' as const;
type StoredDevice = DeviceObject & StoredValue;

function uniqueViolation(err: unknown): never {
  if (pgErrorCode(err) === UNIQUE_VIOLATION && pgConstraint(err) === 'objects_device_public_key') {
    throw new ApiError('conflict', 'another device of this organization has this public_key', { path: '/public_key' });
  }
  throw err;
}

async function checkGroup(w: OrgWrite, groupId: string | null | undefined): Promise<void> {
  if (groupId === null || groupId === undefined) return;
  const rows = await w.tx.query(
    `SELECT 1 FROM objects WHERE id = $1 AND org_id = $2 AND kind = 'security-group' AND NOT deleted`,
    [groupId, w.orgId],
  );
  if (rows.length === 0) throw validationFailed('/security_group_id', 'the id of a security group of this organization');
}

async function orgValue(q: Queryable, orgId: string): Promise<Organization> {
  const org = await getObject<Organization & StoredValue>(q, orgId, 'organization', orgId);
  if (!org) throw notFound('organization');
  return org;
}

function withStatus(device: DeviceObject, status: DeviceStatus | undefined): Device {
  return { ...device, status: status ?? EMPTY_STATUS };
}

export interface CreatedDevice {
  device: Device;
  deviceToken: string;
}

/**
 * Creates a device with the lowest free tunnel IP and a device token (shown
 * once). With `registrationKeyId`, the key is consumed in the same
 * transaction: a single-use key enrolls exactly one device.
 */
export async function createDevice(
  db: Database,
  bus: SignalBus,
  orgId: string,
  input: DeviceCreate,
  registrationKeyId?: string,
): Promise<CreatedDevice> {
  try {
    return await writeInOrg(db, bus, orgId, async (w) => {
      if (registrationKeyId !== undefined) {
        const used = await w.tx.query(
          `UPDATE registration_keys SET used_at = COALESCE(used_at, now())
            WHERE id = $1 AND org_id = $2 AND (NOT single_use OR used_at IS NULL)
              AND (expires_at IS NULL OR expires_at > now())
            RETURNING id`,
          [registrationKeyId, orgId],
        );
        if (used.length === 0) throw new ApiError('unauthorized', 'the registration key is used up or expired');
      }
      const revision = await w.revision();
      await checkGroup(w, input.security_group_id);
      const id = randomUUID();
      const ip = await takeTunnelIp(w.tx, orgId, id, (await orgValue(w.tx, orgId)).network.ipv4_cidr);
      const now = new Date().toISOString();
      const device: StoredDevice = {
        id,
        organization_id: orgId,
        hostname: input.hostname,
        public_key: input.public_key,
        advertise_cidrs: input.advertise_cidrs ?? [],
        endpoints: input.endpoints ?? [],
        relay: input.relay ?? false,
        symmetric_nat: input.symmetric_nat ?? false,
        security_group_id: input.security_group_id ?? null,
        tunnel_ip: formatIpv4(ip),
        revision,
        created_at: now,
        updated_at: now,
      };
      await insertObject(w.tx, orgId, KIND, device);
      const deviceToken = newSecret(SECRET_PREFIX.deviceToken);
      await w.tx.query(
        `INSERT INTO tokens (id, secret_hash, kind, org_id, device_id, role, description) VALUES ($1, $2, 'device', $3, $4, 'device', $5)`,
        [randomUUID(), hashSecret(deviceToken), orgId, id, `device ${input.hostname}`],
      );
      return { device: withStatus(device, undefined), deviceToken };
    });
  } catch (err) {
    return uniqueViolation(err);
  }
}

export async function getDevice(q: Queryable, orgId: string, id: string): Promise<Device | undefined> {
  const rows = await q.query<{ value: DeviceObject; status: DeviceStatus | null }>(
    `SELECT o.value, s.status FROM objects o
       JOIN orgs g ON g.id = o.org_id
       LEFT JOIN device_status s ON s.device_id = o.id
      WHERE o.id = $1 AND o.org_id = $2 AND o.kind = 'device' AND NOT o.deleted AND g.deleted_at IS NULL`,
    [id, orgId],
  );
  const row = rows[0];
  return row ? withStatus(row.value, row.status ?? undefined) : undefined;
}

/** Status of many devices at once, for lists. */
export async function statusesOf(q: Queryable, ids: readonly string[]): Promise<Map<string, DeviceStatus>> {
  if (ids.length === 0) return new Map();
  const rows = await q.query<{ device_id: string; status: DeviceStatus }>(
    'SELECT device_id, status FROM device_status WHERE device_id = ANY($1::uuid[])',
    [ids],
  );
  return new Map(rows.map((r) => [r.device_id, r.status]));
}

export async function patchDevice(
  db: Database,
  bus: SignalBus,
  orgId: string,
  id: string,
  patch: DevicePatch,
  ifMatch?: string,
): Promise<Device> {
  let status: DeviceStatus | undefined;
  try {
    const device = await writeInOrg(db, bus, orgId, async (w) => {
      const current = await lockObject<StoredDevice>(w.tx, orgId, KIND, id);
      checkIfMatch(ifMatch, current.revision);
      const next: StoredDevice = { ...current };
      for (const [k, v] of Object.entries(patch)) if (v !== undefined) (next as Record<string, unknown>)[k] = v;
      const rows = await w.tx.query<{ status: DeviceStatus }>('SELECT status FROM device_status WHERE device_id = $1', [id]);
      status = rows[0]?.status;
      if (sameJson(next, current)) return current;
      const revision = await w.revision();
      if (patch.security_group_id !== undefined && patch.security_group_id !== current.security_group_id) {
        await checkGroup(w, patch.security_group_id);
      }
      const updated = { ...next, revision, updated_at: new Date().toISOString() };
      await updateObject(w.tx, updated);
      return updated;
    });
    return withStatus(device, status);
  } catch (err) {
    return uniqueViolation(err);
  }
}

/** Deletes a device: frees its tunnel IP, revokes its tokens, forgets its status. */
export async function deleteDevice(db: Database, bus: SignalBus, orgId: string, id: string, ifMatch?: string): Promise<void> {
  await writeInOrg(db, bus, orgId, async (w) => {
    const current = await lockObject<StoredDevice>(w.tx, orgId, KIND, id);
    checkIfMatch(ifMatch, current.revision);
    const revision = await w.revision();
    await tombstoneObject(w.tx, current, revision);
    await releaseTunnelIp(w.tx, orgId, id);
    await w.tx.query('DELETE FROM device_status WHERE device_id = $1', [id]);
    await w.tx.query('UPDATE tokens SET revoked_at = now() WHERE device_id = $1 AND revoked_at IS NULL', [id]);
  });
}

/**
 * Records a device's observed state. Takes no revision and signals nothing
 * (PROTOCOL.md: status is not desired state). `last_seen` is the server's clock.
 */
export async function putDeviceStatus(q: Queryable, orgId: string, id: string, input: DeviceStatusInput): Promise<DeviceStatus> {
  const status: DeviceStatus = {
    online: input.online ?? true,
    last_seen: new Date().toISOString(),
    applied_revision: input.applied_revision,
    apply_error: input.apply_error,
    local_endpoints: input.local_endpoints,
    os: input.os,
    agent_version: input.agent_version,
  };
  const rows = await q.query(
    `INSERT INTO device_status (device_id, org_id, status, last_seen)
       SELECT o.id, o.org_id, $3::text::jsonb, now() FROM objects o
        WHERE o.id = $1 AND o.org_id = $2 AND o.kind = 'device' AND NOT o.deleted
     ON CONFLICT (device_id) DO UPDATE SET status = EXCLUDED.status, last_seen = EXCLUDED.last_seen
     RETURNING device_id`,
    [id, orgId, JSON.stringify(status)],
  );
  if (rows.length === 0) throw notFound('device');
  return status;
}
