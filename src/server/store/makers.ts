import type { Queryable } from '../db/index.js';
import type { CascadeCause, CreatedBy, MakerKind } from '../../protocol/index.js';
import type { Actor } from '../principal/index.js';
import { recordAudit } from '../audit/record.js';
import { ApiError, notFound } from '../errors.js';

/**
 * Who mints an organization token or a registration key (docs/protocol.md
 * "Authentication and scope", "Credentials and what made them"):
 * - the admin token: never revoked, so what it makes has no maker to outlive;
 * - an organization token, or a user's session, by id: what it makes is
 *   revoked with it and refused once it expired. A session minting as a
 *   member (`asMember`) must be an `admin` or `owner` member when it commits;
 * - a user (no credential), only by re-parenting: what rests on it lasts while
 *   that user stays a member above `read`.
 */
export type Maker =
  | { readonly kind: 'admin' }
  | { readonly kind: 'token'; readonly credentialId: string }
  | { readonly kind: 'session'; readonly credentialId: string; readonly userId: string; readonly asMember: boolean }
  | { readonly kind: 'user'; readonly userId: string };

/** A maker as stored with what it made: the columns `created_by_*` and `maker_chain`. */
export interface MakerColumns {
  readonly kind: MakerKind;
  readonly credentialId: string | null;
  readonly userId: string | null;
  /** Every token above, the nearest last. */
  readonly chain: readonly string[];
}

/** The rows a cascade ends: tokens and registration keys, with what made each. */
type MadeRow = { id: string; org_id: string; description: string; created_by_kind: MakerKind | null; created_by_credential: string | null };

/** Why a cascade ends what it ends (an audit entry's `details.cause`). */
export interface CascadeReason {
  readonly kind: CascadeCause;
  /** The credential revoked, or the member's user id. */
  readonly id: string;
  /** For a member: `removed` or `demoted`. */
  readonly change?: 'removed' | 'demoted';
}

/**
 * True when every maker above `alias` (a `tokens` or `registration_keys`
 * row) is there, unrevoked and unexpired: what they made dies with them. A
 * maker no longer there was revoked and compacted away (or its organization
 * deleted), so it counts as ended. Most rows have no maker (device tokens,
 * sessions): the empty array costs no lookup.
 */
export const makersValid = (alias: string): string =>
  `(CASE WHEN ${alias}.maker_chain = '{}' THEN true ELSE (SELECT count(*) FROM tokens m WHERE m.id = ANY(${alias}.maker_chain)
     AND m.revoked_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())) = cardinality(${alias}.maker_chain) END)`;

/** When `alias` stops authenticating: its own expiry or its earliest maker's, whichever is first (null: never). */
export const effectiveExpiry = (alias: string): string =>
  `CASE WHEN ${alias}.maker_chain = '{}' THEN ${alias}.expires_at
        ELSE LEAST(${alias}.expires_at, (SELECT min(m.expires_at) FROM tokens m WHERE m.id = ANY(${alias}.maker_chain))) END`;

/** A stored row's maker as the wire shows it. */
export function createdByOf(r: Record<string, unknown>): CreatedBy {
  return {
    credential_kind: (r['created_by_kind'] as MakerKind | null | undefined) ?? null,
    credential_id: (r['created_by_credential'] as string | null | undefined) ?? null,
    user_id: (r['created_by_user'] as string | null | undefined) ?? null,
  };
}

/**
 * The columns of what `maker` makes now in `orgId`, in the minting
 * transaction. The maker's row and every row above it (and a member's
 * membership) are locked FOR SHARE, so a revocation (or removal) committing
 * at the same time waits for this mint, and its cascade then sees the new
 * row: nothing minted escapes the revocation of one of its makers. 401 when
 * a maker is no longer valid, 403 when a session's member may no longer
 * mint there.
 */
export async function lockMaker(q: Queryable, orgId: string, maker: Maker): Promise<MakerColumns> {
  if (maker.kind === 'admin') return { kind: 'admin', credentialId: null, userId: null, chain: [] };
  if (maker.kind === 'user') return { kind: 'user', credentialId: null, userId: maker.userId, chain: [] };
  const ended = new ApiError('unauthorized', 'the credential making this was revoked or expired');
  const heads = await q.query<{ maker_chain: string[]; created_by_user: string | null }>('SELECT maker_chain, created_by_user FROM tokens WHERE id = $1', [
    maker.credentialId,
  ]);
  const head = heads[0];
  if (!head) throw ended;
  const chain = [...(head.maker_chain ?? []), maker.credentialId];
  // From the top down, as a cascade locks them (the revoked credential first): a mint and a revocation never wait on each other in a cycle.
  const locked = await q.query<{ valid: boolean }>(
    `SELECT revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()) AS valid FROM tokens
      WHERE id = ANY($1::uuid[]) ORDER BY array_position($1::uuid[], id) FOR SHARE`,
    [chain],
  );
  if (locked.length !== chain.length || locked.some((r) => r.valid !== true)) throw ended;
  if (maker.kind === 'session' && maker.asMember) {
    const member = await q.query<{ role: string }>('SELECT role FROM memberships WHERE org_id = $1 AND user_id = $2 FOR SHARE', [orgId, maker.userId]);
    const role = member[0]?.role;
    if (role === undefined) throw notFound('organization');
    if (role !== 'admin' && role !== 'owner') throw new ApiError('forbidden', 'a read member may not create credentials');
  }
  return { kind: maker.kind, credentialId: maker.credentialId, userId: maker.kind === 'session' ? maker.userId : head.created_by_user, chain };
}

async function auditEnded(q: Queryable, rows: readonly MadeRow[], what: 'token' | 'registration_key', cause: CascadeReason, actor: Actor | undefined): Promise<void> {
  for (const r of rows) {
    await recordAudit(q, {
      orgId: r.org_id,
      action: what === 'token' ? 'revoke' : 'delete',
      kind: what,
      objectId: r.id,
      objectName: r.description,
      details: { cause, created_by: { credential_kind: r.created_by_kind, credential_id: r.created_by_credential } },
      actor,
    });
  }
}

const MADE = 'id, org_id, description, created_by_kind, created_by_credential';

/**
 * Ends, in the caller's transaction, every organization token and
 * registration key made by one of `credentialIds` or by what they made, at
 * any depth (one statement each: the chain holds every maker above), and
 * audits each with `cause` (actor: the scope's, or `actor`). Registration
 * keys are deleted, as their own DELETE does. Returns the ids of the tokens
 * revoked, for the token index; their streams end through the revocation
 * follower on every replica, as for any revoked token.
 */
export async function endMadeBy(q: Queryable, credentialIds: readonly string[], cause: CascadeReason, actor?: Actor): Promise<string[]> {
  if (credentialIds.length === 0) return [];
  const tokens = await q.query<MadeRow>(
    `UPDATE tokens SET revoked_at = now() WHERE maker_chain <> '{}' AND maker_chain && $1::uuid[] AND kind = 'org' AND revoked_at IS NULL RETURNING ${MADE}`,
    [credentialIds],
  );
  const keys = await q.query<MadeRow>(`DELETE FROM registration_keys WHERE maker_chain <> '{}' AND maker_chain && $1::uuid[] RETURNING ${MADE}`, [credentialIds]);
  await auditEnded(q, tokens, 'token', cause, actor);
  await auditEnded(q, keys, 'registration_key', cause, actor);
  return tokens.map((t) => t.id);
}

/**
 * Ends what rests on a member's authority in one organization (removed, or
 * demoted to `read`): the tokens and keys it made there, through any of its
 * credentials or re-parented to it, and everything those made. Returns the
 * ids of the tokens revoked.
 */
export async function endMadeByMember(q: Queryable, orgId: string, userId: string, change: 'removed' | 'demoted'): Promise<string[]> {
  const cause: CascadeReason = { kind: 'member', id: userId, change };
  const tokens = await q.query<MadeRow>(
    `UPDATE tokens SET revoked_at = now() WHERE org_id = $1 AND created_by_user = $2 AND kind = 'org' AND revoked_at IS NULL RETURNING ${MADE}`,
    [orgId, userId],
  );
  const keys = await q.query<MadeRow>(`DELETE FROM registration_keys WHERE org_id = $1 AND created_by_user = $2 RETURNING ${MADE}`, [orgId, userId]);
  await auditEnded(q, tokens, 'token', cause, undefined);
  await auditEnded(q, keys, 'registration_key', cause, undefined);
  const ids = tokens.map((t) => t.id);
  // What those made carries the same user and was revoked above; a row whose user was not recorded (made before v1.10) still goes with its maker.
  return [...ids, ...(await endMadeBy(q, ids, cause))];
}

/**
 * Moves a token or key (`table`) of `orgId` to rest on `to` (a user, or the
 * admin token) instead of what made it, and everything it made with it:
 * their chains lose the makers above it. Only while it is valid itself (not
 * revoked, not expired); one whose maker already ended is valid again
 * afterwards. 404 otherwise. Returns the previous maker and the tokens whose
 * chain changed (the token index looks them up again).
 */
export async function reparent(
  q: Queryable,
  table: 'tokens' | 'registration_keys',
  orgId: string,
  id: string,
  to: Extract<Maker, { kind: 'admin' | 'user' }>,
): Promise<{ before: CreatedBy; moved: string[] }> {
  const own = table === 'tokens' ? `AND kind = 'org' AND revoked_at IS NULL` : `AND (NOT single_use OR used_at IS NULL)`;
  const rows = await q.query<Record<string, unknown> & { maker_chain: string[] }>(
    `SELECT created_by_kind, created_by_credential, created_by_user, maker_chain FROM ${table}
      WHERE id = $1 AND org_id = $2 ${own} AND (expires_at IS NULL OR expires_at > now()) FOR UPDATE`,
    [id, orgId],
  );
  const row = rows[0];
  if (!row) throw notFound(table === 'tokens' ? 'token' : 'registration key');
  const userId = to.kind === 'user' ? to.userId : null;
  await q.query(
    `UPDATE ${table} SET created_by_kind = $2, created_by_credential = NULL, created_by_user = $3, maker_chain = '{}' WHERE id = $1`,
    [id, to.kind, userId],
  );
  const moved: string[] = [id];
  if (table === 'tokens') {
    const old = row.maker_chain ?? [];
    const below = `SET maker_chain = ARRAY(SELECT x FROM unnest(maker_chain) WITH ORDINALITY u(x, n) WHERE x <> ALL($2::uuid[]) ORDER BY n),
                       created_by_user = $3 WHERE maker_chain <> '{}' AND maker_chain @> ARRAY[$1::uuid]`;
    const tokens = await q.query<{ id: string }>(`UPDATE tokens ${below} RETURNING id`, [id, old, userId]);
    await q.query(`UPDATE registration_keys ${below}`, [id, old, userId]);
    moved.push(...tokens.map((t) => t.id));
  }
  return { before: createdByOf(row), moved };
}
