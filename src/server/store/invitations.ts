import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/index.js';
import {
  DEFAULT_INVITATION_TTL_SECONDS,
  INVITED_BY_ADMIN,
  MAX_INVITATION_TTL_SECONDS,
  MAX_OPEN_INVITATIONS,
  MEMBER_ROLES,
  OWNER_JOINED,
  SECRET_PREFIX,
  type CreatedInvitation,
  type Invitation,
  type InvitationCreate,
  type Member,
  type MemberRole,
} from '../../protocol/index.js';
import type { Actor } from '../principal/index.js';
import { recordAudit } from '../audit/index.js';
import { ApiError, notFound, validationFailed } from '../errors.js';
import { requireOrg } from './org-write.js';
import { toMember } from './members.js';
import { hashSecret, newSecret } from './secrets.js';

const iso = (v: unknown): string => new Date(v as string).toISOString();

function toInvitation(r: Record<string, unknown>): Invitation {
  return {
    id: r['id'] as string,
    organization_id: r['org_id'] as string,
    email: (r['email'] as string | null) ?? null,
    subject: (r['subject'] as string | null) ?? null,
    role: r['role'] as MemberRole,
    created_by: r['created_by'] as string,
    created_at: iso(r['created_at']),
    expires_at: iso(r['expires_at']),
  };
}

/** What names an invitation to a person (an audit entry's `object_name`): who it is for, its email, else its subject; null for one claimed by token. */
export function invitationName(i: Pick<Invitation, 'email' | 'subject'>): string | null {
  return i.email ?? i.subject;
}

const OPEN = 'accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()';
/** Roles ranked in SQL as MEMBER_ROLES ranks them (weakest first). */
const RANK = (column: string): string => `array_position(ARRAY[${MEMBER_ROLES.map((r) => `'${r}'`).join(', ')}], ${column})`;

/** When an invitation created now expires: `expires_in` or `expires_at` (not both), within MAX_INVITATION_TTL_SECONDS. */
function expiryOf(input: InvitationCreate, now: number): Date {
  if (input.expires_in !== undefined && input.expires_at !== undefined) throw validationFailed('/expires_at', 'expires_in or expires_at, not both');
  if (input.expires_at === undefined) return new Date(now + (input.expires_in ?? DEFAULT_INVITATION_TTL_SECONDS) * 1000);
  const at = Date.parse(input.expires_at);
  if (at <= now) throw validationFailed('/expires_at', 'a time in the future');
  if (at > now + MAX_INVITATION_TTL_SECONDS * 1000) throw validationFailed('/expires_at', `at most ${MAX_INVITATION_TTL_SECONDS} seconds from now`);
  return new Date(at);
}

/**
 * Invites by email or subject, or (neither) whoever presents the returned
 * token (shown once; stored hashed). At most MAX_OPEN_INVITATIONS open ones
 * per organization: past it, 409 `conflict` (the count and the insert are
 * one statement; concurrent creates may pass the bound by their number,
 * never more).
 */
export async function createInvitation(q: Queryable, orgId: string, input: InvitationCreate, createdBy: string): Promise<CreatedInvitation> {
  if (input.email !== undefined && input.subject !== undefined) throw validationFailed('/', 'at most one of email and subject');
  const expiresAt = expiryOf(input, Date.now());
  await requireOrg(q, orgId);
  const token = input.email === undefined && input.subject === undefined ? newSecret(SECRET_PREFIX.invitation) : undefined;
  const rows = await q.query(
    `INSERT INTO invitations (id, org_id, email, subject, role, created_by, expires_at, secret_hash)
     SELECT $1, $2, $3, $4, $5, $6, $7, $9 WHERE (SELECT count(*) FROM invitations WHERE org_id = $2 AND ${OPEN}) < $8
     RETURNING *`,
    [
      randomUUID(),
      orgId,
      input.email ?? null,
      input.subject ?? null,
      input.role,
      createdBy,
      expiresAt.toISOString(),
      MAX_OPEN_INVITATIONS,
      token === undefined ? null : hashSecret(token),
    ],
  );
  const row = rows[0];
  if (!row) throw new ApiError('conflict', `the organization has ${MAX_OPEN_INVITATIONS} open invitations; revoke some first`, { limit: MAX_OPEN_INVITATIONS });
  return token === undefined ? toInvitation(row) : { ...toInvitation(row), token };
}

/**
 * A signed-in user accepts the open invitation whose token this is, in one
 * statement: it becomes a member with the invitation's role (keeping a
 * higher one it has). The invitation is used once. 404 when no open
 * invitation has this token (unknown, used, revoked or expired).
 */
export async function acceptInvitationToken(q: Queryable, token: string, userId: string): Promise<{ invitation: Invitation; member: Member }> {
  const rows = await q.query<{ invitation: Record<string, unknown>; member: Record<string, unknown> | null }>(
    `WITH accepted AS (
       UPDATE invitations i SET accepted_at = now(), accepted_by = $2
        WHERE i.secret_hash = $1 AND i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > now()
          AND EXISTS (SELECT 1 FROM orgs g WHERE g.id = i.org_id AND g.deleted_at IS NULL)
        RETURNING i.*),
     joined AS (
       INSERT INTO memberships (org_id, user_id, role) SELECT org_id, $2, role FROM accepted
       ON CONFLICT (org_id, user_id) DO UPDATE
         SET role = CASE WHEN ${RANK('excluded.role')} > ${RANK('memberships.role')} THEN excluded.role ELSE memberships.role END
       RETURNING org_id, user_id, role, created_at)
     SELECT row_to_json(a) AS invitation,
            (SELECT row_to_json(m) FROM (SELECT j.*, u.email, u.name FROM joined j JOIN users u ON u.id = j.user_id) m) AS member
       FROM accepted a`,
    [hashSecret(token), userId],
  );
  const row = rows[0];
  if (!row?.member) throw notFound('invitation');
  const invitation = toInvitation(row.invitation);
  await recordAudit(q, { orgId: invitation.organization_id, action: 'update', kind: 'invitation', objectId: invitation.id, objectName: invitationName(invitation), details: { accepted_by: userId, role: invitation.role } });
  if (invitation.role === 'owner') await endOwnerStandIns(q, invitation.organization_id, userId);
  return { invitation, member: toMember(row.member) };
}

/** Open invitations (not accepted, revoked or expired), oldest first. At most MAX_OPEN_INVITATIONS. */
export async function listInvitations(q: Queryable, orgId: string): Promise<Invitation[]> {
  await requireOrg(q, orgId);
  const rows = await q.query(`SELECT * FROM invitations WHERE org_id = $1 AND ${OPEN} ORDER BY created_at, id LIMIT $2`, [orgId, MAX_OPEN_INVITATIONS]);
  return rows.map(toInvitation);
}

/**
 * Revokes an open invitation, answering who it was for (its email and
 * subject); 404 when there is none, 403 for an owner invitation when
 * `owners` is false.
 */
export async function revokeInvitation(q: Queryable, orgId: string, id: string, scope: { owners: boolean }): Promise<Pick<Invitation, 'email' | 'subject'>> {
  const rows = await q.query<{ role: MemberRole; email: string | null; subject: string | null; revoked: boolean }>(
    `WITH target AS (SELECT id, role, email, subject FROM invitations WHERE id = $1 AND org_id = $2 AND ${OPEN}),
     revoked AS (UPDATE invitations i SET revoked_at = now() FROM target t WHERE i.id = t.id AND ($3 OR t.role <> 'owner') RETURNING i.id)
     SELECT t.role, t.email, t.subject, EXISTS (SELECT 1 FROM revoked) AS revoked FROM target t`,
    [id, orgId, scope.owners],
  );
  const row = rows[0];
  if (!row) throw notFound('invitation');
  if (!row.revoked) throw new ApiError('forbidden', 'only an owner may revoke an owner invitation');
  return { email: row.email, subject: row.subject };
}

/** Who logs in, for matching invitations. */
export interface InvitedUser {
  id: string;
  email: string | null;
  emailVerified: boolean;
  subject: string;
}

/**
 * Accepts, at a user's login (in its transaction), every open invitation
 * matching its subject, or its email (case-insensitive) when the provider
 * verified it; in one statement. The user becomes a member with the
 * invitation's role, or keeps its role when that is higher (and of several
 * invitations to one organization, the highest counts). Each accepted
 * invitation is an audit entry (`update`, kind `invitation`) of `actor`,
 * the user signing in. Returns how many invitations it accepted.
 */
export async function acceptInvitations(q: Queryable, user: InvitedUser, actor: Actor): Promise<number> {
  const email = user.emailVerified ? user.email : null;
  // The membership insert runs to completion though the final SELECT does not read it (PostgreSQL
  // executes every data-modifying CTE exactly once).
  const rows = await q.query<{ id: string; org_id: string; role: string; email: string | null; subject: string | null }>(
    `WITH accepted AS (
       UPDATE invitations i SET accepted_at = now(), accepted_by = $1
        WHERE i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > now()
          AND (i.subject = $2 OR ($3::text IS NOT NULL AND i.email IS NOT NULL AND lower(i.email) = lower($3::text)))
          AND EXISTS (SELECT 1 FROM orgs g WHERE g.id = i.org_id AND g.deleted_at IS NULL)
        RETURNING i.id, i.org_id, i.role, i.email, i.subject),
     best AS (SELECT DISTINCT ON (org_id) org_id, role FROM accepted ORDER BY org_id, ${RANK('role')} DESC),
     joined AS (
       INSERT INTO memberships (org_id, user_id, role) SELECT org_id, $1, role FROM best
       ON CONFLICT (org_id, user_id) DO UPDATE
         SET role = CASE WHEN ${RANK('excluded.role')} > ${RANK('memberships.role')} THEN excluded.role ELSE memberships.role END
       RETURNING org_id)
     SELECT id, org_id, role, email, subject FROM accepted`,
    [user.id, user.subject, email],
  );
  for (const r of rows) {
    await recordAudit(q, { orgId: r.org_id, action: 'update', kind: 'invitation', objectId: r.id, objectName: invitationName(r), actor, details: { accepted_by: user.id, role: r.role } });
  }
  for (const org of new Set(rows.filter((r) => r.role === 'owner').map((r) => r.org_id))) await endOwnerStandIns(q, org, user.id, actor);
  return rows.length;
}

/**
 * When `userId` has just become the first owner of `orgId` (accepting an
 * invitation, or made owner), revokes the organization's open owner
 * invitations claimed by token that the admin token made: they stood in
 * for an owner while it had none (the one made with the organization, or
 * its replacement), and none may stay claimable once it has one. Each is a
 * `revoke` entry with `details` `{reason: OWNER_JOINED, owner_user_id}`, by
 * `actor` (default: the scope's). Nothing when the organization already had
 * another owner: an owner invitation the admin token makes then is meant.
 */
export async function endOwnerStandIns(q: Queryable, orgId: string, userId: string, actor?: Actor): Promise<void> {
  const rows = await q.query<{ id: string; email: string | null; subject: string | null }>(
    `UPDATE invitations SET revoked_at = now()
      WHERE org_id = $1 AND role = 'owner' AND email IS NULL AND subject IS NULL AND created_by = $3 AND ${OPEN}
        AND NOT EXISTS (SELECT 1 FROM memberships m WHERE m.org_id = $1 AND m.role = 'owner' AND m.user_id <> $2)
      RETURNING id, email, subject`,
    [orgId, userId, INVITED_BY_ADMIN],
  );
  for (const r of rows) {
    await recordAudit(q, { orgId, action: 'revoke', kind: 'invitation', objectId: r.id, objectName: invitationName(r), actor, details: { reason: OWNER_JOINED, owner_user_id: userId } });
  }
}
