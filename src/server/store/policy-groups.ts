/**
 * The security group objects of an organization a policy document manages
 * (docs/protocol.md "Policy document"): while it does, its groups live in
 * the organization object, the objects are tombstoned, and writes to them
 * are refused naming the document; released, its groups come back as
 * objects with the same ids, so devices that name them stay in them.
 */
import type { Database, Queryable } from '../db/index.js';
import type { SignalBus } from '../bus/index.js';
import type { Organization, PolicySecurityGroup, SecurityGroup } from '../../protocol/index.js';
import { ApiError } from '../errors.js';
import { getObject, tombstoneObject, type StoredValue } from './objects.js';
import { writeInOrg } from './org-write.js';
import { recordAudit } from '../audit/record.js';

const KIND = 'security-group' as const;

/** 409 `field_owned_elsewhere`, naming the document as the owner. */
export function ownedByPolicy(path: string, what: string): ApiError {
  return new ApiError('field_owned_elsewhere', `${what} is owned by the organization's policy document: change the document (ctl policy apply), or release it (ctl policy release)`, {
    path,
    owner: 'policy',
  });
}

/** Refuses a write to a security group object while a document manages the organization. */
export async function checkGroupsWritable(q: Queryable, orgId: string): Promise<void> {
  const org = await getObject<Organization & StoredValue>(q, orgId, 'organization', orgId);
  if (org?.policy) throw ownedByPolicy('/', 'security groups');
}

async function liveGroupIds(q: Queryable, orgId: string): Promise<string[]> {
  const rows = await q.query<{ id: string }>(`SELECT id FROM objects WHERE org_id = $1 AND kind = 'security-group' AND NOT deleted`, [orgId]);
  return rows.map((r) => r.id);
}

/** Tombstones the organization's group objects, one write each; devices naming them keep their ids (the document's groups have them). */
export async function retireGroupObjects(db: Database, bus: SignalBus, orgId: string, keep: ReadonlySet<string> = new Set()): Promise<void> {
  const ids = (await liveGroupIds(db, orgId)).filter((id) => !keep.has(id));
  await Promise.all(
    ids.map((id) =>
      writeInOrg(db, bus, orgId, async (w) => {
        const rows = await w.tx.query<{ value: SecurityGroup & StoredValue }>(`SELECT value FROM objects WHERE id = $1 AND org_id = $2 AND kind = $3 AND NOT deleted FOR UPDATE`, [id, orgId, KIND]);
        const current = rows[0]?.value;
        if (!current) return;
        const revision = await w.revision();
        await tombstoneObject(w.tx, current, revision);
        await recordAudit(w.tx, { orgId, action: 'delete', kind: 'security_group', objectId: id, objectName: current.name, revision, details: { policy: 'managed' } });
      }),
    ),
  );
}

/** Writes each policy group as a live object with its id: a new row, a tombstone brought back, or a live one overwritten. One write each. */
export async function restoreGroupObjects(db: Database, bus: SignalBus, orgId: string, groups: readonly PolicySecurityGroup[]): Promise<void> {
  await retireGroupObjects(db, bus, orgId, new Set(groups.map((g) => g.id)));
  await Promise.all(
    groups.map((g) =>
      writeInOrg(db, bus, orgId, async (w) => {
        const revision = await w.revision();
        const now = new Date().toISOString();
        const value: SecurityGroup = { ...g, organization_id: orgId, revision, created_at: now, updated_at: now };
        // A brought-back tombstone starts a new life: no patch may build on the version before it (prev_revision NULL).
        await w.tx.query(
          `INSERT INTO objects (id, org_id, kind, revision, value) VALUES ($1, $2, $3, $4, $5::text::jsonb)
           ON CONFLICT (id) DO UPDATE SET revision = EXCLUDED.revision, value = EXCLUDED.value, deleted = false, prev_revision = NULL, changed_at = now()
           WHERE objects.org_id = EXCLUDED.org_id AND objects.kind = EXCLUDED.kind`,
          [g.id, orgId, KIND, revision, JSON.stringify(value)],
        );
        await recordAudit(w.tx, { orgId, action: 'create', kind: 'security_group', objectId: g.id, objectName: g.name, revision, details: { policy: 'released' } });
      }),
    ),
  );
}
