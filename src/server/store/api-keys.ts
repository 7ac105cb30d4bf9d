import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/index.js';
import {
  DEFAULT_API_KEY_TTL_SECONDS,
  MAX_API_KEY_TTL_SECONDS,
  MAX_API_KEYS_PER_USER,
  SECRET_PREFIX,
  type ApiKey,
  type ApiKeyCreate,
  type CreatedApiKey,
  type MemberRole,
} from '../../protocol/index.js';
import { ApiError, notFound, validationFailed } from '../errors.js';
import { hashSecret, newSecret } from './secrets.js';

const iso = (v: unknown): string => new Date(v as string).toISOString();

function toApiKey(r: Record<string, unknown>): ApiKey {
  return {
    id: r['id'] as string,
    user_id: r['user_id'] as string,
    organizations: (r['org_ids'] as string[] | null) ?? [],
    role: r['role'] as MemberRole,
    description: r['description'] as string,
    expires_at: iso(r['expires_at']),
    created_at: iso(r['created_at']),
  };
}

const ACTIVE = `kind = 'api_key' AND revoked_at IS NULL AND expires_at > now()`;

/** 404 unless the user exists. */
export async function requireUser(q: Queryable, userId: string): Promise<void> {
  const rows = await q.query('SELECT 1 FROM users WHERE id = $1', [userId]);
  if (rows.length === 0) throw notFound('user');
}

function expiryOf(expiresAt: string | undefined, now: number): Date {
  if (expiresAt === undefined) return new Date(now + DEFAULT_API_KEY_TTL_SECONDS * 1000);
  const at = Date.parse(expiresAt);
  if (at <= now) throw validationFailed('/expires_at', 'a time in the future');
  if (at > now + MAX_API_KEY_TTL_SECONDS * 1000) throw validationFailed('/expires_at', `at most ${MAX_API_KEY_TTL_SECONDS} seconds from now`);
  return new Date(at);
}

/**
 * Creates a personal API key for `userId`, shown once. Each organization must
 * be one the user is a member of now (else 404); the role is a ceiling (the
 * key never does more than the user's role at the time of each call). At most
 * MAX_API_KEYS_PER_USER active keys per user (409 past it).
 */
export async function createApiKey(q: Queryable, userId: string, input: ApiKeyCreate): Promise<{ created: CreatedApiKey; hash: string }> {
  const expiresAt = expiryOf(input.expires_at, Date.now());
  const orgIds = [...new Set(input.organizations)];
  const members = await q.query<{ org_id: string }>(
    `SELECT m.org_id FROM memberships m JOIN orgs g ON g.id = m.org_id AND g.deleted_at IS NULL WHERE m.user_id = $1 AND m.org_id = ANY($2::uuid[])`,
    [userId, orgIds],
  );
  const member = new Set(members.map((r) => r.org_id));
  const missing = orgIds.find((id) => !member.has(id));
  if (missing !== undefined) throw new ApiError('not_found', `organization ${missing} not found`);
  const key = newSecret(SECRET_PREFIX.apiKey);
  const hash = hashSecret(key);
  const rows = await q.query(
    `INSERT INTO tokens (id, secret_hash, kind, user_id, org_ids, role, description, expires_at)
     SELECT $1, $2, 'api_key', $3, $4::uuid[], $5, $6, $7
      WHERE (SELECT count(*) FROM tokens WHERE user_id = $3 AND ${ACTIVE}) < $8
     RETURNING *`,
    [randomUUID(), hash, userId, orgIds, input.role, input.description ?? '', expiresAt.toISOString(), MAX_API_KEYS_PER_USER],
  );
  const row = rows[0];
  if (!row) throw new ApiError('conflict', `a user holds at most ${MAX_API_KEYS_PER_USER} API keys; revoke some first`, { limit: MAX_API_KEYS_PER_USER });
  return { created: { ...toApiKey(row), key }, hash };
}

/** A user's active API keys (not revoked, not expired), oldest first; at most MAX_API_KEYS_PER_USER. */
export async function listApiKeys(q: Queryable, userId: string): Promise<ApiKey[]> {
  await requireUser(q, userId);
  const rows = await q.query(`SELECT * FROM tokens WHERE user_id = $1 AND ${ACTIVE} ORDER BY created_at, id LIMIT $2`, [userId, MAX_API_KEYS_PER_USER]);
  return rows.map(toApiKey);
}

/** Revokes one of a user's API keys, answering its description; its open streams end at the next revocation check. */
export async function revokeApiKey(q: Queryable, userId: string, id: string): Promise<{ description: string }> {
  const rows = await q.query<{ description: string }>(
    `UPDATE tokens SET revoked_at = now() WHERE id = $1 AND user_id = $2 AND kind = 'api_key' AND revoked_at IS NULL RETURNING description`,
    [id, userId],
  );
  const row = rows[0];
  if (!row) throw notFound('API key');
  return row;
}
