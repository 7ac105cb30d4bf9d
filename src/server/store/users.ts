import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/index.js';
import type { User } from '../../protocol/index.js';

const iso = (v: unknown): string => new Date(v as string).toISOString();

/** A users row as the wire shows it. */
export function toUser(r: Record<string, unknown>): User {
  return {
    id: r['id'] as string,
    issuer: r['issuer'] as string,
    subject: r['subject'] as string,
    email: (r['email'] as string | null) ?? null,
    name: (r['name'] as string | null) ?? null,
    server_admin: r['server_admin'] === true,
    created_at: iso(r['created_at']),
    last_login_at: r['last_login_at'] === null || r['last_login_at'] === undefined ? null : iso(r['last_login_at']),
  };
}

/** What names a user to a person (an audit entry's `object_name`): its email, else its name; null with neither. */
export function userName(u: Pick<User, 'email' | 'name'>): string | null {
  return u.email ?? u.name;
}

/** Who the issuer vouched for at a login (policy already applied). */
export interface LoginIdentity {
  issuer: string;
  subject: string;
  email: string | undefined;
  emailVerified: boolean;
  name: string | undefined;
}

/** `--oidc-admins`: emails (compared lower-case, only when verified) and subjects. */
export interface BootstrapAdmins {
  readonly emails: readonly string[];
  readonly subjects: readonly string[];
}

/** Whether `identity` is named by `--oidc-admins`: its subject, or its verified email. */
export function isBootstrapAdmin(identity: LoginIdentity, admins: BootstrapAdmins): boolean {
  if (admins.subjects.includes(identity.subject)) return true;
  return identity.emailVerified && identity.email !== undefined && admins.emails.includes(identity.email.trim().toLowerCase());
}

/**
 * Creates the user of (issuer, subject) or updates its email, name and
 * last login, in one statement. `server_admin` is decided at the user's
 * first login only (`--oidc-admins`): the flag never takes it away later,
 * nor grants it to a user who already exists.
 */
export async function upsertUser(q: Queryable, identity: LoginIdentity, admins: BootstrapAdmins): Promise<{ user: User; created: boolean }> {
  const rows = await q.query(
    `INSERT INTO users (id, issuer, subject, email, name, server_admin, last_login_at)
     VALUES ($1, $2, $3, $4, $5, $6, now())
     ON CONFLICT (issuer, subject) DO UPDATE SET email = excluded.email, name = excluded.name, last_login_at = excluded.last_login_at
     RETURNING *, (xmax = 0) AS created`,
    [randomUUID(), identity.issuer, identity.subject, identity.email ?? null, identity.name ?? null, isBootstrapAdmin(identity, admins)],
  );
  const row = rows[0];
  if (!row) throw new Error('upserting a user returned no row');
  return { user: toUser(row), created: row['created'] === true };
}

export async function getUser(q: Queryable, id: string): Promise<User | undefined> {
  const rows = await q.query('SELECT * FROM users WHERE id = $1', [id]);
  return rows[0] ? toUser(rows[0]) : undefined;
}
