import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/index.js';
import { pgConstraint, pgErrorCode, UNIQUE_VIOLATION } from '../db/index.js';
import type { SignalBus } from '../bus/index.js';
import {
  EMPTY_STATUS,
  normalTags,
  formatIpv4,
  SECRET_PREFIX,
  type Device,
  type DeviceCreate,
  type DeviceObject,
  type DevicePatch,
  type DeviceStatus,
  type Organization,
} from '../../protocol/index.js';
import { ApiError, notFound, validationFailed } from '../errors.js';
import { checkIfMatch, getObject, insertObject, lockObject, tombstoneObject, updateObject, type StoredValue } from './objects.js';
import { writeInOrg, type OrgWrite } from './org-write.js';
import { fieldChanges } from '../audit/changes.js';
import { recordAudit } from '../audit/record.js';
import { sameJson } from '../../util/same-json.js';
import { effectiveStatus, statusColumns, statusesOf, type StatusRow } from './device-status.js';
import { releaseTunnelIp, takeTunnelIp } from './tunnel-ips.js';
import { hashSecret, newSecret } from './secrets.js';
import { makersValid } from './makers.js';
import { checkDevicePrefixes, checkNewApprovals, nextApprovedCidrs } from './route-approval.js';
import { checkTagChange, type TagCaller } from './tag-ownership.js';

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
  if (rows.length > 0) return;
  // While a policy document manages the organization, its groups are in the organization object.
  if ((await orgValue(w.tx, w.orgId)).policy?.groups.some((g) => g.id === groupId)) return;
  throw validationFailed('/security_group_id', 'the id of a security group of this organization');
}

async function orgValue(q: Queryable, orgId: string): Promise<Organization> {
  const org = await getObject<Organization & StoredValue>(q, orgId, 'organization', orgId);
  if (!org) throw notFound('organization');
  return org;
}

/** Where a refused approval points: the admin's list, else the request that was auto-approved. */
function approvalPath(input: DevicePatch): string {
  return input.approved_cidrs !== undefined ? '/approved_cidrs' : '/advertise_cidrs';
}

function withStatus(device: DeviceObject, status: DeviceStatus | undefined): Device {
  return { ...device, status: status ?? EMPTY_STATUS };
}

export interface CreatedDevice {
  device: Device;
  deviceToken: string;
  /** The device token's id (its revocation ends the device's streams and tunnels). */
  tokenId: string;
  /** When the device token expires (null: never). */
  tokenExpiresAt: string | null;
}

/**
 * Creates a device with the lowest free tunnel IP and a device token (shown
 * once), expiring `tokenTtlSeconds` from now (0: never). With
 * `registrationKeyId`, the key is consumed in the same transaction (a
 * single-use key enrolls exactly one device) and an ephemeral key makes the
 * device ephemeral.
 */
export async function createDevice(
  db: Database,
  bus: SignalBus,
  orgId: string,
  input: DeviceCreate,
  registrationKeyId: string | undefined,
  tokenTtlSeconds: number,
  tagCaller: TagCaller,
): Promise<CreatedDevice> {
  checkDevicePrefixes(input);
  try {
    return await writeInOrg(db, bus, orgId, async (w) => {
      let ephemeral = false;
      let tags = normalTags(input.tags ?? []);
      if (registrationKeyId !== undefined) {
        const used = await w.tx.query<{ ephemeral: boolean; tags: string[] }>(
          `UPDATE registration_keys k SET used_at = COALESCE(k.used_at, now())
            WHERE k.id = $1 AND k.org_id = $2 AND (NOT k.single_use OR k.used_at IS NULL)
              AND (k.expires_at IS NULL OR k.expires_at > now()) AND ${makersValid('k')}
            RETURNING k.ephemeral, k.tags`,
          [registrationKeyId, orgId],
        );
        const key = used[0];
        if (!key) throw new ApiError('unauthorized', 'the registration key is used up or expired');
        ephemeral = key.ephemeral === true;
        tags = normalTags(key.tags);
      }
      const revision = await w.revision();
      await checkGroup(w, input.security_group_id);
      const id = randomUUID();
      const { network, tag_owners } = await orgValue(w.tx, orgId);
      // A key's tags were checked when the key was made, against its maker.
      if (registrationKeyId === undefined) checkTagChange(tag_owners, [], tags, tagCaller, '/tags');
      const ip = await takeTunnelIp(w.tx, orgId, id, network.ipv4_cidr);
      const approved = nextApprovedCidrs([], input.approved_cidrs, input.advertise_cidrs, network, tags);
      await checkNewApprovals(w.tx, orgId, id, network, [], approved, approvalPath(input));
      const now = new Date().toISOString();
      const device: StoredDevice = {
        id,
        organization_id: orgId,
        hostname: input.hostname,
        public_key: input.public_key,
        advertise_cidrs: input.advertise_cidrs ?? [],
        approved_cidrs: approved,
        endpoints: input.endpoints ?? [],
        relay: input.relay ?? false,
        symmetric_nat: input.symmetric_nat ?? false,
        security_group_id: input.security_group_id ?? null,
        tags,
        tunnel_ip: formatIpv4(ip),
        ephemeral,
        revision,
        created_at: now,
        updated_at: now,
      };
      await insertObject(w.tx, orgId, KIND, device);
      await recordAudit(w.tx, {
        orgId,
        action: 'create',
        kind: KIND,
        objectId: id,
        objectName: device.hostname,
        revision,
        details: registrationKeyId === undefined ? {} : { registration_key_id: registrationKeyId },
      });
      const deviceToken = newSecret(SECRET_PREFIX.deviceToken);
      const tokenId = randomUUID();
      const token = await w.tx.query<{ expires_at: unknown }>(
        `INSERT INTO tokens (id, secret_hash, kind, org_id, device_id, role, description, expires_at)
         VALUES ($1, $2, 'device', $3, $4, 'device', $5, CASE WHEN $6::float8 > 0 THEN now() + make_interval(secs => $6::float8) END)
         RETURNING expires_at`,
        [tokenId, hashSecret(deviceToken), orgId, id, `device ${input.hostname}`, tokenTtlSeconds],
      );
      const expires = token[0]?.expires_at;
      const tokenExpiresAt = expires === null || expires === undefined ? null : new Date(expires as string).toISOString();
      return { device: withStatus(device, undefined), deviceToken, tokenId, tokenExpiresAt };
    });
  } catch (err) {
    return uniqueViolation(err);
  }
}

export async function getDevice(q: Queryable, orgId: string, id: string, staleAfterSeconds: number): Promise<Device | undefined> {
  const rows = await q.query<StatusRow & { value: DeviceObject }>(
    `SELECT o.value, ${statusColumns('o.id', '$3')} FROM objects o
       JOIN orgs g ON g.id = o.org_id
       LEFT JOIN device_status s ON s.device_id = o.id
      WHERE o.id = $1 AND o.org_id = $2 AND o.kind = 'device' AND NOT o.deleted AND g.deleted_at IS NULL`,
    [id, orgId, staleAfterSeconds],
  );
  const row = rows[0];
  return row ? withStatus(row.value, effectiveStatus(row)) : undefined;
}

export async function patchDevice(
  db: Database,
  bus: SignalBus,
  orgId: string,
  id: string,
  patch: DevicePatch,
  staleAfterSeconds: number,
  tagCaller: TagCaller,
  ifMatch?: string,
): Promise<Device> {
  checkDevicePrefixes(patch);
  try {
    const { device, statuses } = await writeInOrg(db, bus, orgId, async (w) => {
      const current = await w.lock<StoredDevice>(KIND, id);
      checkIfMatch(ifMatch, current.revision);
      const next: StoredDevice = { ...current };
      for (const [k, v] of Object.entries(patch)) if (v !== undefined) (next as Record<string, unknown>)[k] = v;
      if (patch.tags !== undefined) next.tags = normalTags(patch.tags);
      const tagsChanged = patch.tags !== undefined && !sameJson(next.tags, current.tags);
      let org: Organization | undefined;
      if (patch.approved_cidrs !== undefined || patch.advertise_cidrs !== undefined || tagsChanged) {
        org = await orgValue(w.tx, orgId);
        // A device given a tag has its standing requests weighed against that tag's auto-approvers.
        const requested = patch.advertise_cidrs ?? (tagsChanged ? next.advertise_cidrs : undefined);
        next.approved_cidrs = nextApprovedCidrs(current.approved_cidrs, patch.approved_cidrs, requested, org.network, next.tags);
      }
      if (sameJson(next, current)) return { device: current, statuses: undefined };
      if (org !== undefined && tagsChanged) checkTagChange(org.tag_owners, current.tags, next.tags, tagCaller, '/tags');
      const revision = await w.revision();
      if (org !== undefined) await checkNewApprovals(w.tx, orgId, id, org.network, current.approved_cidrs, next.approved_cidrs, approvalPath(patch));
      if (patch.security_group_id !== undefined && patch.security_group_id !== current.security_group_id) {
        await checkGroup(w, patch.security_group_id);
      }
      const updated = { ...next, revision, updated_at: new Date().toISOString() };
      const details = fieldChanges(current, next);
      // Approving routes is its own action: it is what reviewers of the log look for.
      const action = details.fields.includes('approved_cidrs') ? 'approve' : 'update';
      // One round trip for the row, its audit entry, the status the answer carries and the signal (a patch is
      // what an agent's every endpoint change costs, and each round trip wakes the database and us once more).
      void w.pipelined(updateObject(w.tx, updated));
      void w.pipelined(recordAudit(w.tx, { orgId, action, kind: KIND, objectId: id, objectName: next.hostname, revision, details }));
      return { device: updated, statuses: w.pipelined(statusesOf(w.tx, [id], staleAfterSeconds)) };
    }, { touches: [{ kind: KIND, id }] });
    return withStatus(device, (await (statuses ?? statusesOf(db, [id], staleAfterSeconds))).get(id));
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
    await w.tx.query('DELETE FROM device_presence WHERE device_id = $1', [id]);
    await w.tx.query('UPDATE tokens SET revoked_at = now() WHERE device_id = $1 AND revoked_at IS NULL', [id]);
    await recordAudit(w.tx, { orgId, action: 'delete', kind: KIND, objectId: id, objectName: current.hostname, revision });
  });
}
