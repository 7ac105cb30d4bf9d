import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/index.js';
import { MAX_SESSIONS_PER_USER, SECRET_PREFIX, type Session } from '../../protocol/index.js';
import { notFound } from '../errors.js';
import { hashSecret, newSecret } from './secrets.js';

const iso = (v: unknown): string => new Date(v as string).toISOString();
const isoOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : iso(v));

function toSession(r: Record<string, unknown>): Session {
  return {
    id: r['id'] as string,
    user_id: r['user_id'] as string,
    created_at: iso(r['created_at']),
    expires_at: iso(r['expires_at']),
    max_expires_at: iso(r['max_expires_at']),
    last_used_at: isoOrNull(r['last_used_at']),
    source: (r['source'] as string | null) ?? null,
    user_agent: (r['user_agent'] as string | null) ?? null,
    description: r['description'] as string,
  };
}

const LIVE = `kind = 'session' AND revoked_at IS NULL AND expires_at > now()`;
/** Longest user agent kept with a session. */
const USER_AGENT_MAX = 256;

export interface SessionCreate {
  userId: string;
  /** Idle lifetime, seconds (--session-ttl). */
  ttlSeconds: number;
  /** Absolute lifetime, seconds (--session-max-age). */
  maxAgeSeconds: number;
  source: string | undefined;
  userAgent: string | undefined;
  description: string;
}

/** A new session, its token (shown once), and the sessions it pushed out (MAX_SESSIONS_PER_USER). */
export interface CreatedSessionRow {
  session: Session;
  token: string;
  /** The user's oldest sessions revoked to stay within MAX_SESSIONS_PER_USER: their ids and descriptions (what names them in the audit log). */
  revoked: Pick<Session, 'id' | 'description'>[];
}

/**
 * Creates a session (a `tokens` row of kind `session`). A user keeps at most
 * MAX_SESSIONS_PER_USER live sessions: past it, the oldest are revoked (in
 * the caller's transaction; the revocation follower ends their streams).
 */
export async function createSession(q: Queryable, input: SessionCreate): Promise<CreatedSessionRow> {
  const token = newSecret(SECRET_PREFIX.session);
  const ttl = Math.min(input.ttlSeconds, input.maxAgeSeconds);
  const rows = await q.query(
    `INSERT INTO tokens (id, secret_hash, kind, user_id, role, description, expires_at, max_expires_at, last_used_at, source, user_agent)
     VALUES ($1, $2, 'session', $3, 'user', $4, now() + make_interval(secs => $5), now() + make_interval(secs => $6), now(), $7, $8)
     RETURNING *`,
    [randomUUID(), hashSecret(token), input.userId, input.description, ttl, input.maxAgeSeconds, input.source ?? null, input.userAgent?.slice(0, USER_AGENT_MAX) ?? null],
  );
  const row = rows[0];
  if (!row) throw new Error('creating a session returned no row');
  const revoked = await q.query<{ id: string; description: string }>(
    `UPDATE tokens SET revoked_at = now() WHERE id IN (
       SELECT id FROM tokens WHERE user_id = $1 AND ${LIVE} ORDER BY created_at DESC, id OFFSET $2)
     RETURNING id, description`,
    [input.userId, MAX_SESSIONS_PER_USER],
  );
  return { session: toSession(row), token, revoked: revoked.map((r) => ({ id: r.id, description: r.description })) };
}

/** A live session by id (and user, when given). */
export async function getSession(q: Queryable, id: string, userId?: string): Promise<Session | undefined> {
  const rows = await q.query(`SELECT * FROM tokens WHERE id = $1 AND ${LIVE} AND ($2::uuid IS NULL OR user_id = $2::uuid)`, [id, userId ?? null]);
  return rows[0] ? toSession(rows[0]) : undefined;
}

/** A user's live sessions, newest first (at most MAX_SESSIONS_PER_USER exist). */
export async function listSessions(q: Queryable, userId: string): Promise<Session[]> {
  const rows = await q.query(`SELECT * FROM tokens WHERE user_id = $1 AND ${LIVE} ORDER BY created_at DESC, id LIMIT $2`, [userId, MAX_SESSIONS_PER_USER]);
  return rows.map(toSession);
}

/**
 * Moves a live session's idle end to now + `ttlSeconds`, never past its
 * `max_expires_at`, and records the use. The token does not change.
 * Undefined when the session is no longer live.
 */
export async function refreshSession(q: Queryable, id: string, ttlSeconds: number): Promise<Session | undefined> {
  const rows = await q.query(
    `UPDATE tokens SET expires_at = LEAST(now() + make_interval(secs => $2), max_expires_at), last_used_at = now()
      WHERE id = $1 AND ${LIVE} RETURNING *`,
    [id, ttlSeconds],
  );
  return rows[0] ? toSession(rows[0]) : undefined;
}

/** Revokes one of a user's live sessions, answering its description; 404 when there is none of that id. */
export async function revokeSession(q: Queryable, userId: string, id: string): Promise<Pick<Session, 'description'>> {
  const rows = await q.query<{ description: string }>(
    `UPDATE tokens SET revoked_at = now() WHERE id = $1 AND user_id = $2 AND ${LIVE} RETURNING description`,
    [id, userId],
  );
  const row = rows[0];
  if (!row) throw notFound('session');
  return row;
}
