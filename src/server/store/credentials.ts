import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/index.js';
import {
  SECRET_PREFIX,
  type CreatedOrgToken,
  type CreatedRegistrationKey,
  type OrgToken,
  type OrgTokenCreate,
  type RegistrationKey,
  type RegistrationKeyCreate,
  type MemberRole,
  type TokenRole,
} from '../../protocol/index.js';
import { notFound } from '../errors.js';
import { requireOrg } from './org-write.js';
import { recordAudit } from '../audit/record.js';
import { hashSecret, newSecret, sameHash } from './secrets.js';
import type { IndexedToken } from './token-index.js';
import type { TokenPrincipal } from '../principal/index.js';

const iso = (v: unknown): string | null => (v === null || v === undefined ? null : new Date(v as string).toISOString());

function toOrgToken(r: Record<string, unknown>): OrgToken {
  return {
    id: r['id'] as string,
    organization_id: r['org_id'] as string,
    role: r['role'] as TokenRole,
    description: r['description'] as string,
    expires_at: iso(r['expires_at']),
    created_at: iso(r['created_at']) ?? '',
  };
}

function toRegistrationKey(r: Record<string, unknown>): RegistrationKey {
  return {
    id: r['id'] as string,
    organization_id: r['org_id'] as string,
    description: r['description'] as string,
    single_use: r['single_use'] === true,
    ephemeral: r['ephemeral'] === true,
    expires_at: iso(r['expires_at']),
    used: r['used_at'] !== null && r['used_at'] !== undefined,
    created_at: iso(r['created_at']) ?? '',
  };
}

/**
 * Resolves a bearer secret. One indexed lookup; expired and revoked
 * credentials resolve to nothing, and so does a registration key that can no
 * longer enroll (401 on every route, as when enrolling). `adminHash` is the
 * bootstrap admin token's hash.
 */
export async function authenticate(q: Queryable, secret: string, adminHash: string): Promise<TokenPrincipal | undefined> {
  const hash = hashSecret(secret);
  if (sameHash(hash, adminHash)) return { type: 'admin' };
  if (secret.startsWith(SECRET_PREFIX.registrationKey)) {
    const rows = await q.query<{ id: string; org_id: string }>(
      `SELECT k.id, k.org_id FROM registration_keys k JOIN orgs g ON g.id = k.org_id
        WHERE k.secret_hash = $1 AND g.deleted_at IS NULL
          AND (NOT k.single_use OR k.used_at IS NULL) AND (k.expires_at IS NULL OR k.expires_at > now())`,
      [hash],
    );
    const row = rows[0];
    return row ? { type: 'registration', keyId: row.id, orgId: row.org_id } : undefined;
  }
  return (await lookupToken(q, hash))?.principal;
}

const VALID_TOKEN = 't.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())';

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

/** The columns toIndexed reads, from `tokens t LEFT JOIN users u` (a session's server admin flag). */
const TOKEN_COLUMNS = 't.id, t.kind, t.org_id, t.device_id, t.role, t.expires_at, t.user_id, t.org_ids, u.server_admin';
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

export async function createOrgToken(q: Queryable, orgId: string, input: OrgTokenCreate): Promise<CreatedOrgToken> {
  await requireOrg(q, orgId);
  const token = newSecret(SECRET_PREFIX.orgToken);
  const rows = await q.query(
    `INSERT INTO tokens (id, secret_hash, kind, org_id, role, description, expires_at)
     VALUES ($1, $2, 'org', $3, $4, $5, $6) RETURNING *`,
    [randomUUID(), hashSecret(token), orgId, input.role, input.description ?? '', input.expires_at ?? null],
  );
  const created = toOrgToken(rows[0] ?? {});
  await recordAudit(q, { orgId, action: 'create', kind: 'token', objectId: created.id, details: { role: created.role } });
  return { ...created, token };
}

export async function listOrgTokens(q: Queryable, orgId: string): Promise<OrgToken[]> {
  await requireOrg(q, orgId);
  const rows = await q.query(
    `SELECT * FROM tokens WHERE org_id = $1 AND kind = 'org' AND revoked_at IS NULL ORDER BY created_at, id`,
    [orgId],
  );
  return rows.map(toOrgToken);
}

/** Revokes a token; its open streams end at the next revocation check. */
export async function revokeOrgToken(q: Queryable, orgId: string, id: string): Promise<void> {
  const rows = await q.query(
    `UPDATE tokens SET revoked_at = now() WHERE id = $1 AND org_id = $2 AND kind = 'org' AND revoked_at IS NULL RETURNING id`,
    [id, orgId],
  );
  if (rows.length === 0) throw notFound('token');
  await recordAudit(q, { orgId, action: 'revoke', kind: 'token', objectId: id });
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
  // No token matched: one row of nulls besides `now`.
  const rows = await q.query<{ now: Date; valid: boolean | null } & (TokenRow | { id: null })>(
    `SELECT n.now, t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > n.now) AS valid, t.secret_hash, ${TOKEN_COLUMNS}
       FROM (SELECT now() AS now) n
       LEFT JOIN (${TOKEN_FROM})
         ON t.revoked_at >= $1 OR (t.expires_at >= $1 AND t.expires_at <= n.now)
         OR (t.created_at >= $2 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > n.now))`,
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

export async function createRegistrationKey(q: Queryable, orgId: string, input: RegistrationKeyCreate): Promise<CreatedRegistrationKey> {
  await requireOrg(q, orgId);
  const key = newSecret(SECRET_PREFIX.registrationKey);
  const rows = await q.query(
    `INSERT INTO registration_keys (id, secret_hash, org_id, description, single_use, expires_at, ephemeral)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
    [randomUUID(), hashSecret(key), orgId, input.description ?? '', input.single_use ?? false, input.expires_at ?? null, input.ephemeral ?? false],
  );
  const created = toRegistrationKey(rows[0] ?? {});
  await recordAudit(q, {
    orgId,
    action: 'create',
    kind: 'registration_key',
    objectId: created.id,
    details: { single_use: created.single_use, ephemeral: created.ephemeral },
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
  const rows = await q.query('DELETE FROM registration_keys WHERE id = $1 AND org_id = $2 RETURNING id', [id, orgId]);
  if (rows.length === 0) throw notFound('registration key');
  await recordAudit(q, { orgId, action: 'delete', kind: 'registration_key', objectId: id });
}
