import { randomUUID } from 'node:crypto';
import { pgConstraint, pgErrorCode, UNIQUE_VIOLATION, type Database, type Queryable } from '../db/index.js';
import type { SignalBus } from '../bus/index.js';
import {
  DEFAULT_NETWORK,
  ipv4Pool,
  type CreatedOrganization,
  type Network,
  type Organization,
  type OrganizationCreate,
  type OrganizationPatch,
} from '../../protocol/index.js';
import { ApiError, notFound, validationFailed } from '../errors.js';
import { checkIfMatch, getObject, insertObject, lockObject, tombstoneObject, updateObject } from './objects.js';
import { ownedByPolicy } from './policy-groups.js';
import { writeInOrg } from './org-write.js';
import { addOwner } from './members.js';
import { createInvitation } from './invitations.js';
import { checkNetworkPrefixes, checkNetworkRoutes } from './route-approval.js';
import { sameJson } from '../../util/same-json.js';
import { fieldChanges } from '../audit/changes.js';
import { recordAudit } from '../audit/record.js';

const KIND = 'organization' as const;

/** The unique index on live organizations' names (migration 19). */
export const ORG_NAME_INDEX = 'objects_organization_name';

/**
 * Names are unique among live organizations. The index decides, not a
 * read before the write: two creates racing with one name both pass any
 * check, and the loser must get 409 as well, not a 500.
 */
function nameTaken(err: unknown, name: string | undefined): never {
  if (pgErrorCode(err) === UNIQUE_VIOLATION && pgConstraint(err) === ORG_NAME_INDEX) {
    throw new ApiError('already_exists', `another organization is named ${JSON.stringify(name)}`, { path: '/name' }, { cause: err });
  }
  throw err;
}

/** Who changes an organization: `rename` false for an organization-scoped credential, which may not change its name. */
export interface OrganizationWriter {
  readonly rename: boolean;
}

function checkNetwork(network: Network): void {
  if (!ipv4Pool(network.ipv4_cidr)) throw validationFailed('/network/ipv4_cidr', 'an IPv4 CIDR with prefix /8../30');
}

/** Who creates an organization: a user (its first owner) or the admin token. */
export type OrganizationCreator = { readonly userId: string } | { readonly admin: true };

/**
 * Creates an organization with its owners, in one transaction
 * (docs/protocol.md "Members and roles"): the creating user, the existing
 * user `owner_user_id`, an owner invitation to `owner_email`; and when the
 * admin token names no owner, an owner invitation claimed by its token
 * (returned once), so that every organization has an owner or one invited.
 */
export async function createOrganization(db: Database, input: OrganizationCreate, creator: OrganizationCreator): Promise<CreatedOrganization> {
  if (input.owner_user_id !== undefined && input.owner_email !== undefined) throw validationFailed('/owner_email', 'owner_user_id or owner_email, not both');
  const id = randomUUID();
  const now = new Date().toISOString();
  checkNetworkPrefixes(input.network);
  const network: Network = { ...DEFAULT_NETWORK, ...input.network };
  checkNetwork(network);
  checkNetworkRoutes(undefined, network);
  return db.transaction(async (tx) => {
    await tx.query('INSERT INTO orgs (id, head_revision) VALUES ($1, 1)', [id]);
    const org: Organization = {
      id,
      name: input.name,
      description: input.description ?? '',
      network,
      audit_readable_by_read: input.audit_readable_by_read ?? false,
      tag_owners: input.tag_owners ?? {},
      revision: 1,
      created_at: now,
      updated_at: now,
    };
    await insertObject(tx, id, KIND, org);
    if ('userId' in creator) await addOwner(tx, id, creator.userId);
    if (input.owner_user_id !== undefined) {
      const user = await tx.query('SELECT 1 FROM users WHERE id = $1', [input.owner_user_id]);
      if (user.length === 0) throw validationFailed('/owner_user_id', 'the id of an existing user');
      await addOwner(tx, id, input.owner_user_id);
    }
    const invite = input.owner_email !== undefined || (!('userId' in creator) && input.owner_user_id === undefined);
    const createdBy = 'userId' in creator ? `user:${creator.userId}` : 'admin';
    const invitation = invite
      ? await createInvitation(tx, id, input.owner_email === undefined ? { role: 'owner' } : { email: input.owner_email, role: 'owner' }, createdBy)
      : undefined;
    // Its owners are part of the creation: one entry names them (the invitation's later acceptance or revocation has its own).
    const owners = {
      ...(input.owner_user_id === undefined ? {} : { owner_user_id: input.owner_user_id }),
      ...(invitation === undefined ? {} : { owner_invitation_id: invitation.id }),
    };
    await recordAudit(tx, { orgId: id, action: 'create', kind: KIND, objectId: id, objectName: org.name, revision: 1, ...(Object.keys(owners).length > 0 ? { details: owners } : {}) });
    return invitation === undefined ? org : { ...org, owner_invitation: invitation };
  }).catch((err: unknown) => nameTaken(err, input.name));
}

export async function getOrganization(q: Queryable, id: string): Promise<Organization | undefined> {
  return getObject<Organization & { [k: string]: unknown }>(q, id, KIND, id);
}

/** Live organizations, by name; `only` restricts to one (organization-scoped tokens). */
export async function listOrganizations(q: Queryable, only?: string): Promise<Organization[]> {
  const rows = await q.query<{ value: Organization }>(
    `SELECT o.value FROM objects o JOIN orgs g ON g.id = o.org_id
      WHERE o.kind = 'organization' AND NOT o.deleted AND g.deleted_at IS NULL AND ($1::uuid IS NULL OR o.id = $1::uuid)
      ORDER BY o.value->>'name', o.id`,
    [only ?? null],
  );
  return rows.map((r) => r.value);
}

/** While a document manages the organization, its tag owners and network settings (but the tunnel pool) are the document's. */
function checkPolicyOwned(current: Organization, patch: OrganizationPatch): void {
  if (patch.tag_owners !== undefined && !sameJson(patch.tag_owners, current.tag_owners)) throw ownedByPolicy('/tag_owners', 'tag_owners');
  for (const [field, value] of Object.entries(patch.network ?? {})) {
    if (field !== 'ipv4_cidr' && !sameJson(value, current.network[field as keyof Network])) throw ownedByPolicy(`/network/${field}`, `network.${field}`);
  }
}

export async function patchOrganization(
  db: Database,
  bus: SignalBus,
  id: string,
  patch: OrganizationPatch,
  ifMatch?: string,
  writer: OrganizationWriter = { rename: true },
): Promise<Organization> {
  checkNetworkPrefixes(patch.network);
  return writeInOrg(db, bus, id, async (w) => {
    const current = await lockObject<Organization & { [k: string]: unknown }>(w.tx, id, KIND, id);
    checkIfMatch(ifMatch, current.revision);
    // Refused before the name is looked at: a tenant renaming to a taken name would learn another tenant has it (v1.4, v1.16).
    if (!writer.rename && patch.name !== undefined && patch.name !== current.name) {
      throw new ApiError('forbidden', 'only the admin token or a server admin may rename an organization', { path: '/name' });
    }
    if (current.policy) checkPolicyOwned(current, patch);
    const network: Network = { ...current.network, ...patch.network };
    checkNetwork(network);
    checkNetworkRoutes(current.network, network);
    const next = {
      ...current,
      name: patch.name ?? current.name,
      description: patch.description ?? current.description,
      network,
      audit_readable_by_read: patch.audit_readable_by_read ?? current.audit_readable_by_read,
      tag_owners: patch.tag_owners ?? current.tag_owners,
    };
    if (sameJson(next, current)) return current;
    if (network.ipv4_cidr !== current.network.ipv4_cidr) {
      const used = await w.tx.query('SELECT 1 FROM device_ips WHERE org_id = $1 LIMIT 1', [id]);
      if (used.length > 0) {
        throw new ApiError('conflict', 'network.ipv4_cidr cannot change while the organization has devices', {
          path: '/network/ipv4_cidr',
        });
      }
    }
    const revision = await w.revision();
    const updated = { ...next, revision, updated_at: new Date().toISOString() };
    await updateObject(w.tx, updated);
    await recordAudit(w.tx, { orgId: id, action: 'update', kind: KIND, objectId: id, objectName: next.name, revision, details: fieldChanges(current, next) });
    return updated;
  }).catch((err: unknown) => nameTaken(err, patch.name));
}

/**
 * Deletes an empty organization. Its tombstone tells its watchers; the
 * organization row itself goes at compaction.
 */
export async function deleteOrganization(db: Database, bus: SignalBus, id: string, ifMatch?: string): Promise<void> {
  await writeInOrg(db, bus, id, async (w) => {
    const current = await lockObject<Organization & { [k: string]: unknown }>(w.tx, id, KIND, id);
    checkIfMatch(ifMatch, current.revision);
    const rows = await w.tx.query<{ kind: string; n: number }>(
      `SELECT kind, count(*)::int AS n FROM objects WHERE org_id = $1 AND kind <> 'organization' AND NOT deleted GROUP BY kind`,
      [id],
    );
    if (rows.length > 0) {
      const what = rows.map((r) => `${Number(r.n)} ${r.kind}(s)`).join(', ');
      throw new ApiError('conflict', `organization still has ${what}; delete them first`);
    }
    const revision = await w.revision();
    await tombstoneObject(w.tx, current, revision);
    await w.tx.query('UPDATE orgs SET deleted_at = now() WHERE id = $1', [id]);
    await w.tx.query('UPDATE tokens SET revoked_at = now() WHERE org_id = $1 AND revoked_at IS NULL', [id]);
    await recordAudit(w.tx, { orgId: id, action: 'delete', kind: KIND, objectId: id, objectName: current.name, revision });
  });
}

export { notFound };
