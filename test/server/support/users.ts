/**
 * Users and sessions for tests, made by SQL (as the identity part's login
 * would make them): a user row and a `tokens` row of kind `session`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Queryable } from '../../../src/server/db/index.js';
import { hashSecret } from '../../../src/server/store/index.js';

export interface TestUser {
  id: string;
  subject: string;
  email: string | null;
  /** A valid session's secret (a bearer token). */
  session: string;
}

let counter = 0;

/** A user (issuer `https://idp.test`), with one session valid for an hour. */
export async function createUserForTest(
  db: Queryable,
  opts: { email?: string | null; serverAdmin?: boolean; subject?: string } = {},
): Promise<TestUser> {
  const id = randomUUID();
  const subject = opts.subject ?? `subject-${process.pid}-${counter++}-${randomBytes(4).toString('hex')}`;
  const email = opts.email === undefined ? `${subject}@example.test` : opts.email;
  await db.query('INSERT INTO users (id, issuer, subject, email, name, server_admin) VALUES ($1, $2, $3, $4, $5, $6)', [
    id,
    'https://idp.test',
    subject,
    email,
    `User ${subject}`,
    opts.serverAdmin ?? false,
  ]);
  return { id, subject, email, session: await createSessionForTest(db, id) };
}

/** A session of `userId`: its secret, valid for `ttlSeconds` (negative: already expired). */
export async function createSessionForTest(db: Queryable, userId: string, ttlSeconds = 3600): Promise<string> {
  const secret = `fps_${randomBytes(32).toString('base64url')}`;
  await db.query(
    `INSERT INTO tokens (id, secret_hash, kind, user_id, role, description, expires_at, max_expires_at)
     VALUES ($1, $2, 'session', $3, 'user', 'test session', now() + make_interval(secs => $4), now() + make_interval(secs => $4))`,
    [randomUUID(), hashSecret(secret), userId, ttlSeconds],
  );
  return secret;
}

/** Makes `userId` a member of `orgId` with `role` (as an accepted invitation would). */
export async function addMemberForTest(db: Queryable, orgId: string, userId: string, role: 'owner' | 'admin' | 'read'): Promise<void> {
  await db.query(
    `INSERT INTO memberships (org_id, user_id, role) VALUES ($1, $2, $3) ON CONFLICT (org_id, user_id) DO UPDATE SET role = excluded.role`,
    [orgId, userId, role],
  );
}
