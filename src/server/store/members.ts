import type { Queryable } from '../db/index.js';
import type { Member, MemberRole, Organization } from '../../protocol/index.js';
import { ApiError, notFound } from '../errors.js';
import { requireOrg } from './org-write.js';

const iso = (v: unknown): string => new Date(v as string).toISOString();

/** A membership row (with the user's email and name) as the wire shows it. */
export function toMember(r: Record<string, unknown>): Member {
  return {
    user_id: r['user_id'] as string,
    organization_id: r['org_id'] as string,
    role: r['role'] as MemberRole,
    email: (r['email'] as string | null) ?? null,
    name: (r['name'] as string | null) ?? null,
    created_at: iso(r['created_at']),
  };
}

/** What names a member to a person (an audit entry's `object_name`): its email, else its name; null with neither. */
export function memberName(m: Pick<Member, 'email' | 'name'>): string | null {
  return m.email ?? m.name;
}

/** A user's role in a live organization; undefined when not a member. One primary-key lookup. */
export async function memberRole(q: Queryable, orgId: string, userId: string): Promise<MemberRole | undefined> {
  const rows = await q.query<{ role: MemberRole }>(
    `SELECT m.role FROM memberships m JOIN orgs g ON g.id = m.org_id WHERE m.org_id = $1 AND m.user_id = $2 AND g.deleted_at IS NULL`,
    [orgId, userId],
  );
  return rows[0]?.role;
}

/** Makes `userId` an owner of `orgId` (its creator), in the creating transaction. */
export async function addOwner(q: Queryable, orgId: string, userId: string): Promise<void> {
  await q.query(
    `INSERT INTO memberships (org_id, user_id, role) VALUES ($1, $2, 'owner') ON CONFLICT (org_id, user_id) DO UPDATE SET role = 'owner'`,
    [orgId, userId],
  );
}

export async function listMembers(q: Queryable, orgId: string): Promise<Member[]> {
  await requireOrg(q, orgId);
  const rows = await q.query(
    `SELECT m.org_id, m.user_id, m.role, m.created_at, u.email, u.name FROM memberships m JOIN users u ON u.id = m.user_id
      WHERE m.org_id = $1 ORDER BY m.created_at, m.user_id`,
    [orgId],
  );
  return rows.map(toMember);
}

/** The live organizations `userId` is a member of, by name; `only`: among these (an API key's). */
export async function listUserOrganizations(q: Queryable, userId: string, only?: readonly string[]): Promise<Organization[]> {
  const rows = await q.query<{ value: Organization }>(
    `SELECT o.value FROM memberships m JOIN orgs g ON g.id = m.org_id AND g.deleted_at IS NULL
       JOIN objects o ON o.org_id = m.org_id AND o.id = m.org_id AND o.kind = 'organization' AND NOT o.deleted
      WHERE m.user_id = $1 AND ($2::uuid[] IS NULL OR m.org_id = ANY($2::uuid[]))
      ORDER BY o.value->>'name', o.id`,
    [userId, only === undefined ? null : [...only]],
  );
  return rows.map((r) => r.value);
}

/**
 * The organization's owner rows, locked in one order, counted without the
 * target: concurrent changes of two owners serialize on these locks, and the
 * second sees the first's result (READ COMMITTED re-reads a locked row), so
 * an organization never loses its last owner. MATERIALIZED: every owner row
 * is locked, not only as many as the count would need.
 */
const OTHER_OWNERS = `owners AS MATERIALIZED (
    SELECT user_id FROM memberships WHERE org_id = $1 AND role = 'owner' ORDER BY user_id FOR UPDATE
  ), others AS (SELECT count(*) AS n FROM owners WHERE user_id <> $2)`;

/** What a member change may touch: `owners` false (an admin) leaves owners and the owner role alone. */
export interface MemberChangeScope {
  owners: boolean;
}

function refused(was: MemberRole | null | undefined, scope: MemberChangeScope, newRole?: MemberRole): ApiError {
  if (was === null || was === undefined) return notFound('member');
  if (!scope.owners && (was === 'owner' || newRole === 'owner')) return new ApiError('forbidden', 'only an owner may change an owner or make one');
  return new ApiError('conflict', 'an organization keeps at least one owner', { reason: 'last_owner' });
}

/**
 * Changes a member's role, in one statement: 404 when not a member, 403 when
 * the scope may not touch owners, 409 when it would leave no owner. Returns
 * the member and its role before (`was`).
 */
export async function setMemberRole(
  q: Queryable,
  orgId: string,
  userId: string,
  role: MemberRole,
  scope: MemberChangeScope,
): Promise<{ member: Member; was: MemberRole }> {
  await requireOrg(q, orgId);
  const rows = await q.query<{ was: MemberRole | null; changed: Record<string, unknown> | null }>(
    `WITH ${OTHER_OWNERS},
     changed AS (
       UPDATE memberships m SET role = $3
        WHERE m.org_id = $1 AND m.user_id = $2
          AND ($4 OR (m.role <> 'owner' AND $3 <> 'owner'))
          AND (m.role <> 'owner' OR $3 = 'owner' OR (SELECT n FROM others) > 0)
        RETURNING m.org_id, m.user_id, m.role, m.created_at)
     SELECT (SELECT role FROM memberships WHERE org_id = $1 AND user_id = $2) AS was,
            (SELECT row_to_json(c) FROM (SELECT c.*, u.email, u.name FROM changed c JOIN users u ON u.id = c.user_id) c) AS changed`,
    [orgId, userId, role, scope.owners],
  );
  const row = rows[0];
  // `was` reads the statement's snapshot, taken before its UPDATE: the role before.
  if (row?.changed && row.was !== null) return { member: toMember(row.changed), was: row.was };
  throw refused(row?.was, scope, role);
}

/** Removes a member, in one statement: 404, 403 and 409 as setMemberRole. Answers the user's email and name. */
export async function removeMember(q: Queryable, orgId: string, userId: string, scope: MemberChangeScope): Promise<Pick<Member, 'email' | 'name'>> {
  await requireOrg(q, orgId);
  const rows = await q.query<{ was: MemberRole | null; removed: MemberRole | null; email: string | null; name: string | null }>(
    `WITH ${OTHER_OWNERS},
     removed AS (
       DELETE FROM memberships m
        WHERE m.org_id = $1 AND m.user_id = $2
          AND ($3 OR m.role <> 'owner')
          AND (m.role <> 'owner' OR (SELECT n FROM others) > 0)
        RETURNING m.role)
     SELECT (SELECT role FROM memberships WHERE org_id = $1 AND user_id = $2) AS was, (SELECT role FROM removed) AS removed,
            (SELECT email FROM users WHERE id = $2) AS email, (SELECT name FROM users WHERE id = $2) AS name`,
    [orgId, userId, scope.owners],
  );
  const row = rows[0];
  if (row?.removed) return { email: row.email, name: row.name };
  throw refused(row?.was, scope);
}
