import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/index.js';
import type { SignalBus } from '../bus/index.js';
import type { Rule, SecurityGroup, SecurityGroupCreate, SecurityGroupPatch } from '../../protocol/index.js';
import { pgConstraint, pgErrorCode, UNIQUE_VIOLATION } from '../db/index.js';
import { ApiError, validationFailed } from '../errors.js';
import { checkIfMatch, getObject, insertObject, lockObject, tombstoneObject, updateObject, type StoredValue } from './objects.js';
import { writeInOrg } from './org-write.js';
import { fieldChanges } from '../audit/changes.js';
import { recordAudit } from '../audit/record.js';
import { sameJson } from '../../util/same-json.js';
import { checkGroupsWritable } from './policy-groups.js';
import { normalTags } from '../../protocol/index.js';

const KIND = 'security-group' as const;
type StoredGroup = SecurityGroup & StoredValue;

/** What the schema can't say: port ranges are ordered, and ports only mean something for tcp/udp. */
export function checkRules(rules: readonly Rule[] | undefined, field: string): void {
  rules?.forEach((rule, i) => {
    const path = `/${field}/${i}`;
    if (rule.to_port < rule.from_port) throw validationFailed(`${path}/to_port`, `a port ≥ from_port (${rule.from_port})`);
    const portless = rule.ip_protocol === 'icmp' || rule.ip_protocol === 'icmpv6';
    if (portless && (rule.from_port !== 0 || rule.to_port !== 0)) {
      throw validationFailed(`${path}/from_port`, `0 for ${rule.ip_protocol} (it has no ports)`);
    }
  });
}

/** Names are unique among an organization's live groups (`group:<name>` must name one group). */
function nameTaken(err: unknown, name: string | null | undefined): never {
  if (pgErrorCode(err) === UNIQUE_VIOLATION && pgConstraint(err) === 'objects_group_name') {
    throw new ApiError('already_exists', `another security group of this organization is named ${JSON.stringify(name)}`, { path: '/name' });
  }
  throw err;
}

export async function createSecurityGroup(db: Database, bus: SignalBus, orgId: string, input: SecurityGroupCreate): Promise<SecurityGroup> {
  checkRules(input.inbound_rules, 'inbound_rules');
  checkRules(input.outbound_rules, 'outbound_rules');
  return writeInOrg(db, bus, orgId, async (w) => {
    await checkGroupsWritable(w.tx, orgId);
    const revision = await w.revision();
    const now = new Date().toISOString();
    const group: StoredGroup = {
      id: randomUUID(),
      organization_id: orgId,
      name: input.name ?? null,
      description: input.description ?? '',
      applies_to: normalTags(input.applies_to ?? []),
      inbound_rules: input.inbound_rules ?? [],
      outbound_rules: input.outbound_rules ?? [],
      revision,
      created_at: now,
      updated_at: now,
    };
    await insertObject(w.tx, orgId, KIND, group);
    await recordAudit(w.tx, { orgId, action: 'create', kind: 'security_group', objectId: group.id, objectName: group.name, revision });
    return group;
  }).catch((err: unknown) => nameTaken(err, input.name));
}

export async function getSecurityGroup(q: Queryable, orgId: string, id: string): Promise<SecurityGroup | undefined> {
  return getObject<StoredGroup>(q, orgId, KIND, id);
}

export async function patchSecurityGroup(
  db: Database,
  bus: SignalBus,
  orgId: string,
  id: string,
  patch: SecurityGroupPatch,
  ifMatch?: string,
): Promise<SecurityGroup> {
  checkRules(patch.inbound_rules, 'inbound_rules');
  checkRules(patch.outbound_rules, 'outbound_rules');
  return writeInOrg(db, bus, orgId, async (w) => {
    await checkGroupsWritable(w.tx, orgId);
    const current = await lockObject<StoredGroup>(w.tx, orgId, KIND, id);
    checkIfMatch(ifMatch, current.revision);
    const next: StoredGroup = {
      ...current,
      name: patch.name !== undefined ? patch.name : current.name,
      description: patch.description ?? current.description,
      applies_to: patch.applies_to !== undefined ? normalTags(patch.applies_to) : current.applies_to,
      inbound_rules: patch.inbound_rules ?? current.inbound_rules,
      outbound_rules: patch.outbound_rules ?? current.outbound_rules,
    };
    if (sameJson(next, current)) return current;
    const revision = await w.revision();
    const updated = { ...next, revision, updated_at: new Date().toISOString() };
    await updateObject(w.tx, updated);
    await recordAudit(w.tx, { orgId, action: 'update', kind: 'security_group', objectId: id, objectName: next.name, revision, details: fieldChanges(current, next) });
    return updated;
  }).catch((err: unknown) => nameTaken(err, patch.name));
}

/** 409 while a device uses the group. The check runs under the revision lock, as device writes do. */
export async function deleteSecurityGroup(db: Database, bus: SignalBus, orgId: string, id: string, ifMatch?: string): Promise<void> {
  await writeInOrg(db, bus, orgId, async (w) => {
    await checkGroupsWritable(w.tx, orgId);
    const current = await lockObject<StoredGroup>(w.tx, orgId, KIND, id);
    checkIfMatch(ifMatch, current.revision);
    const revision = await w.revision();
    const users = await w.tx.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM objects WHERE org_id = $1 AND kind = 'device' AND NOT deleted AND value->>'security_group_id' = $2`,
      [orgId, id],
    );
    const n = Number(users[0]?.n ?? 0);
    if (n > 0) throw new ApiError('conflict', `security group is used by ${n} device(s); detach them first`);
    await tombstoneObject(w.tx, current, revision);
    await recordAudit(w.tx, { orgId, action: 'delete', kind: 'security_group', objectId: id, objectName: current.name, revision });
  });
}
