import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/index.js';
import {
  normalTags,
  SECRET_PREFIX,
  type CreatedOrgToken,
  type CreatedRegistrationKey,
  type OrgToken,
  type OrgTokenCreate,
  type RegistrationKey,
  type RegistrationKeyCreate,
  type MemberRole,
  type Organization,
  type TokenRole,
} from '../../protocol/index.js';
import { ApiError, notFound, validationFailed } from '../errors.js';
import { requireOrg } from './org-write.js';
import { getObject, type StoredValue } from './objects.js';
import { checkTagChange, type TagCaller } from './tag-ownership.js';
import { recordAudit } from '../audit/record.js';
import { hashSecret, newSecret, sameHash } from './secrets.js';
import type { IndexedToken } from './token-index.js';
import type { TokenPrincipal } from '../principal/index.js';
import { createdByOf, effectiveExpiry, endMadeBy, lockMaker, makersValid, reparent, type Maker, type MakerColumns } from './makers.js';

const iso = (v: unknown): string | null => (v === null || v === undefined ? null : new Date(v as string).toISOString());

function toOrgToken(r: Record<string, unknown>): OrgToken {
  return {
    id: r['id'] as string,
    organization_id: r['org_id'] as string,
    role: r['role'] as TokenRole,
    description: r['description'] as string,
    expires_at: iso(r['expires_at']),
    created_at: iso(r['created_at']) ?? '',
    created_by: createdByOf(r),
  };
}

function toRegistrationKey(r: Record<string, unknown>): RegistrationKey {
  return {
    id: r['id'] as string,
    organization_id: r['org_id'] as string,
    description: r['description'] as string,
    single_use: r['single_use'] === true,
    ephemeral: r['ephemeral'] === true,
    tags: Array.isArray(r['tags']) ? (r['tags'] as string[]) : [],
    expires_at: iso(r['expires_at']),
    used: r['used_at'] !== null && r['used_at'] !== undefined,
    created_at: iso(r['created_at']) ?? '',
    created_by: createdByOf(r),
  };
}

/**
 * Resolves a bearer secret. One indexed lookup; expired and revoked
 * credentials resolve to nothing, and so does a registration key that can no
 * longer enroll (401 on every route, as when enrolling), and a token or key
 * one of whose makers was revoked or expired. `adminHash` is the bootstrap
 * admin token's hash.
 */
export async function authenticate(q: Queryable, secret: string, adminHash: string): Promise<TokenPrincipal | undefined> {
  const hash = hashSecret(secret);
  if (sameHash(hash, adminHash)) return { type: 'admin' };
  if (secret.startsWith(SECRET_PREFIX.registrationKey)) {
    const rows = await q.query<{ id: string; org_id: string }>(
      `SELECT k.id, k.org_id FROM registration_keys k JOIN orgs g ON g.id = k.org_id
        WHERE k.secret_hash = $1 AND g.deleted_at IS NULL
          AND (NOT k.single_use OR k.used_at IS NULL) AND (k.expires_at IS NULL OR k.expires_at > now()) AND ${makersValid('k')}`,
      [hash],
    );
    const row = rows[0];
    return row ? { type: 'registration', keyId: row.id, orgId: row.org_id } : undefined;
  }
  return (await lookupToken(q, hash))?.principal;
}

const VALID_TOKEN = `t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now()) AND ${makersValid('t')}`;

type TokenRow = {
  id: string;
  kind: string;
  org_id: string;
  device_id: string | null;
  role: string;
  expires_at: unknown;
  user_id: string | null;
  org_ids: string[] | null;
  server_admin: boolean | null;
  secret_hash?: string;
};

/**
 * The columns toIndexed reads, from `tokens t LEFT JOIN users u` (a session's
 * server admin flag); `expires_at` is when it stops authenticating, its
 * makers' expiries included.
 */
const TOKEN_COLUMNS = `t.id, t.kind, t.org_id, t.device_id, t.role, ${effectiveExpiry('t')} AS expires_at, t.user_id, t.org_ids, u.server_admin`;
const TOKEN_FROM = 'tokens t LEFT JOIN users u ON u.id = t.user_id';

function toPrincipal(row: TokenRow): IndexedToken['principal'] {
  if (row.kind === 'device' && row.device_id) return { type: 'device', tokenId: row.id, orgId: row.org_id, deviceId: row.device_id };
  if (row.kind === 'session' && row.user_id) {
    return { type: 'user', credential: 'session', tokenId: row.id, userId: row.user_id, serverAdmin: row.server_admin === true };
  }
  if (row.kind === 'api_key' && row.user_id) {
    return {
      type: 'user',
      credential: 'api_key',
      tokenId: row.id,
      userId: row.user_id,
      serverAdmin: false,
      keyRole: row.role as MemberRole,
      keyOrgIds: row.org_ids ?? [],
    };
  }
  return { type: 'org', tokenId: row.id, orgId: row.org_id, role: row.role as TokenRole };
}

function toIndexed(row: TokenRow): IndexedToken {
  const expiresAt = row.expires_at === null || row.expires_at === undefined ? null : new Date(row.expires_at as string).getTime();
  return { principal: toPrincipal(row), expiresAt };
}

/** A token for the token index, with its secret's hash. */
export interface HashedToken {
  hash: string;
  token: IndexedToken;
}

/** A token by its secret's hash, with its expiry, for the token index; undefined when not valid. */
export async function lookupToken(q: Queryable, hash: string): Promise<IndexedToken | undefined> {
  const rows = await q.query<TokenRow>(`SELECT ${TOKEN_COLUMNS} FROM ${TOKEN_FROM} WHERE t.secret_hash = $1 AND ${VALID_TOKEN}`, [hash]);
  const row = rows[0];
  return row ? toIndexed(row) : undefined;
}

/** Every valid token, at most `limit` (the token index at start). */
export async function validTokens(q: Queryable, limit: number): Promise<HashedToken[]> {
  const rows = await q.query<TokenRow & { secret_hash: string }>(
    `SELECT ${TOKEN_COLUMNS}, t.secret_hash FROM ${TOKEN_FROM} WHERE ${VALID_TOKEN} LIMIT $1`,
    [limit],
  );
  return rows.map((r) => ({ hash: r.secret_hash, token: toIndexed(r) }));
}

/** The maker columns of an INSERT, from $n on: kind, credential, user, chain. */
const makerValues = (m: MakerColumns): unknown[] => [m.kind, m.credentialId, m.userId, [...m.chain]];

/** An organization token just made, and when it stops authenticating (its makers' expiries included), for the token index. */
export interface MadeOrgToken {
  created: CreatedOrgToken;
  effectiveExpiresAt: string | null;
}

/** Creates an organization token made by `maker` (recorded with it: the token ends with its maker). */
export async function createOrgToken(q: Queryable, orgId: string, input: OrgTokenCreate, maker: Maker): Promise<MadeOrgToken> {
  await requireOrg(q, orgId);
  const made = await lockMaker(q, orgId, maker);
  const token = newSecret(SECRET_PREFIX.orgToken);
  const rows = await q.query(
    `INSERT INTO tokens AS t (id, secret_hash, kind, org_id, role, description, expires_at, created_by_kind, created_by_credential, created_by_user, maker_chain)
     VALUES ($1, $2, 'org', $3, $4, $5, $6, $7, $8, $9, $10::uuid[]) RETURNING *, ${effectiveExpiry('t')} AS effective_expires_at`,
    [randomUUID(), hashSecret(token), orgId, input.role, input.description ?? '', input.expires_at ?? null, ...makerValues(made)],
  );
  const row = rows[0] ?? {};
  const created = toOrgToken(row);
  await recordAudit(q, { orgId, action: 'create', kind: 'token', objectId: created.id, objectName: created.description, details: { role: created.role, created_by: created.created_by } });
  return { created: { ...created, token }, effectiveExpiresAt: iso(row['effective_expires_at']) };
}

export async function listOrgTokens(q: Queryable, orgId: string): Promise<OrgToken[]> {
  await requireOrg(q, orgId);
  const rows = await q.query(
    `SELECT * FROM tokens WHERE org_id = $1 AND kind = 'org' AND revoked_at IS NULL ORDER BY created_at, id`,
    [orgId],
  );
  return rows.map(toOrgToken);
}

/**
 * Revokes a token, and what it made (at any depth); their open streams end
 * at the next revocation check. Returns every token id revoked.
 */
export async function revokeOrgToken(q: Queryable, orgId: string, id: string): Promise<string[]> {
  const rows = await q.query<{ description: string }>(
    `UPDATE tokens SET revoked_at = now() WHERE id = $1 AND org_id = $2 AND kind = 'org' AND revoked_at IS NULL RETURNING description`,
    [id, orgId],
  );
  const row = rows[0];
  if (!row) throw notFound('token');
  await recordAudit(q, { orgId, action: 'revoke', kind: 'token', objectId: id, objectName: row.description });
  return [id, ...(await endMadeBy(q, [id], { kind: 'token', id }))];
}

/** What changed among the tokens since a cursor's last round (see TokenChangeCursor). */
export interface TokenChanges {
  /** Tokens revoked, or whose expiry passed, since `revokedSince` (an id may come again in a later round). */
  revoked: string[];
  /** Tokens created since `createdSince` and valid now. */
  created: HashedToken[];
  /** The database's clock when it answered. */
  now: Date;
}

/**
 * One statement for the token follower: ids of tokens revoked or expired
 * since `revokedSince` (a stream must not outlive its credential, whether it
 * was revoked or ran out), and tokens created since `createdSince` that are
 * valid now (so a token made on one replica is known to the others).
 */
export async function tokenChangesSince(q: Queryable, revokedSince: Date, createdSince: Date): Promise<TokenChanges> {
  // No token matched: one row of nulls besides `now`. A token whose maker expired in the window ended with it
  // (the revocation of a maker revokes what it made, so those come as revoked).
  // Each arm of the OR has its index (one bitmap scan each), the makers' one included: `now` must stay now(), not a CTE's.
  const rows = await q.query<{ now: Date; valid: boolean | null } & (TokenRow | { id: null })>(
    `SELECT n.now, t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > n.now) AND ${makersValid('t')} AS valid,
            t.secret_hash, ${TOKEN_COLUMNS}
       FROM (SELECT now() AS now) n
       LEFT JOIN (${TOKEN_FROM})
         ON t.revoked_at >= $1 OR (t.expires_at >= $1 AND t.expires_at <= n.now)
         OR (t.created_at >= $2 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > n.now))
         OR (t.maker_chain <> '{}' AND t.maker_chain && (SELECT coalesce(array_agg(e.id), '{}') FROM tokens e WHERE e.expires_at >= $1 AND e.expires_at <= now()))`,
    [revokedSince.toISOString(), createdSince.toISOString()],
  );
  const now = rows[0]?.now ? new Date(rows[0].now) : new Date();
  const changes: TokenChanges = { revoked: [], created: [], now };
  for (const r of rows) {
    if (r.id === null) continue;
    if (r.valid !== true) changes.revoked.push(r.id);
    else if (r.secret_hash) changes.created.push({ hash: r.secret_hash, token: toIndexed(r) });
  }
  return changes;
}

/** How long registration keys live (`--registration-key-ttl`, `--registration-key-max-ttl`), seconds; a maximum of 0: none. */
export interface RegistrationKeyTerms {
  readonly ttlSeconds: number;
  readonly maxTtlSeconds: number;
}

/**
 * When a key created now expires: `expires_at` as asked (a past time makes
 * a key that never enrolls, as before), else the default TTL; never past
 * the maximum, and never "never" while there is one (400).
 */
function registrationKeyExpiry(asked: string | null | undefined, terms: RegistrationKeyTerms, now: number): string | null {
  const max = terms.maxTtlSeconds > 0 ? now + terms.maxTtlSeconds * 1000 : undefined;
  if (asked === undefined) {
    if (terms.ttlSeconds <= 0) return max === undefined ? null : new Date(max).toISOString();
    const at = now + terms.ttlSeconds * 1000;
    return new Date(max === undefined ? at : Math.min(at, max)).toISOString();
  }
  if (asked === null) {
    if (max !== undefined) throw validationFailed('/expires_at', `a time at most ${terms.maxTtlSeconds} seconds from now (this server sets a maximum: no key lives for ever)`);
    return null;
  }
  const at = Date.parse(asked);
  if (max !== undefined && at > max) throw validationFailed('/expires_at', `at most ${terms.maxTtlSeconds} seconds from now`);
  return new Date(at).toISOString();
}

/** Creates a registration key made by `maker` (it ends with its maker), expiring as `terms` say. */
export async function createRegistrationKey(
  q: Queryable,
  orgId: string,
  input: RegistrationKeyCreate,
  maker: Maker,
  terms: RegistrationKeyTerms,
  tagCaller: TagCaller,
): Promise<CreatedRegistrationKey> {
  const expiresAt = registrationKeyExpiry(input.expires_at, terms, Date.now());
  await requireOrg(q, orgId);
  if (input.tags !== undefined && input.tags.length > 0) {
    // The key gives its tags to every device it enrolls: making it is giving them.
    const org = await getObject<Organization & StoredValue>(q, orgId, 'organization', orgId);
    if (!org) throw notFound('organization');
    checkTagChange(org.tag_owners, [], normalTags(input.tags), tagCaller, '/tags');
  }
  const made = await lockMaker(q, orgId, maker);
  const key = newSecret(SECRET_PREFIX.registrationKey);
  const rows = await q.query(
    `INSERT INTO registration_keys (id, secret_hash, org_id, description, single_use, expires_at, ephemeral, created_by_kind, created_by_credential, created_by_user, maker_chain, tags)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::uuid[], $12::text[]) RETURNING *`,
    [
      randomUUID(),
      hashSecret(key),
      orgId,
      input.description ?? '',
      input.single_use ?? false,
      expiresAt,
      input.ephemeral ?? false,
      ...makerValues(made),
      normalTags(input.tags ?? []),
    ],
  );
  const created = toRegistrationKey(rows[0] ?? {});
  await recordAudit(q, {
    orgId,
    action: 'create',
    kind: 'registration_key',
    objectId: created.id,
    objectName: created.description,
    details: { single_use: created.single_use, ephemeral: created.ephemeral, tags: created.tags, expires_at: created.expires_at, created_by: created.created_by },
  });
  return { ...created, key };
}

export async function listRegistrationKeys(q: Queryable, orgId: string): Promise<RegistrationKey[]> {
  await requireOrg(q, orgId);
  const rows = await q.query('SELECT * FROM registration_keys WHERE org_id = $1 ORDER BY created_at, id', [orgId]);
  return rows.map(toRegistrationKey);
}

export async function getRegistrationKey(q: Queryable, orgId: string, id: string): Promise<RegistrationKey | undefined> {
  const rows = await q.query('SELECT * FROM registration_keys WHERE id = $1 AND org_id = $2', [id, orgId]);
  return rows[0] ? toRegistrationKey(rows[0]) : undefined;
}

export async function deleteRegistrationKey(q: Queryable, orgId: string, id: string): Promise<void> {
  const rows = await q.query<{ description: string }>('DELETE FROM registration_keys WHERE id = $1 AND org_id = $2 RETURNING description', [id, orgId]);
  const row = rows[0];
  if (!row) throw notFound('registration key');
  await recordAudit(q, { orgId, action: 'delete', kind: 'registration_key', objectId: id, objectName: row.description });
}

/** The caller an owner re-parents to: itself (a user), or the admin token. */
export type ReparentTo = Extract<Maker, { kind: 'admin' | 'user' }>;

/**
 * Makes an organization token rest on `to` instead of what made it (and
 * what it made with it). Returns the token and the tokens whose makers
 * changed.
 */
export async function reparentOrgToken(q: Queryable, orgId: string, id: string, to: ReparentTo): Promise<{ token: OrgToken; moved: string[] }> {
  await requireOrg(q, orgId);
  const { before, moved } = await reparent(q, 'tokens', orgId, id, to);
  const rows = await q.query('SELECT * FROM tokens WHERE id = $1', [id]);
  const token = toOrgToken(rows[0] ?? {});
  await recordAudit(q, { orgId, action: 'update', kind: 'token', objectId: id, objectName: token.description, details: { fields: ['created_by'], changes: { created_by: { from: before, to: token.created_by } }, from: before, to: token.created_by } });
  return { token, moved };
}

/** Makes a registration key rest on `to` instead of what made it. */
export async function reparentRegistrationKey(q: Queryable, orgId: string, id: string, to: ReparentTo): Promise<RegistrationKey> {
  await requireOrg(q, orgId);
  const { before } = await reparent(q, 'registration_keys', orgId, id, to);
  const key = await getRegistrationKey(q, orgId, id);
  if (!key) throw new ApiError('internal', 'a re-parented registration key vanished in its own transaction');
  await recordAudit(q, { orgId, action: 'update', kind: 'registration_key', objectId: id, objectName: key.description, details: { fields: ['created_by'], changes: { created_by: { from: before, to: key.created_by } }, from: before, to: key.created_by } });
  return key;
}
