import { jsonColumn, type Queryable } from '../db/index.js';
import { MAX_PENDING_LOGINS, MAX_PENDING_LOGINS_PER_SOURCE } from '../../protocol/index.js';
import { ApiError } from '../errors.js';
import { hashSecret, newSecret } from './secrets.js';

/** What a browser login keeps between its start and its callback (the PKCE verifier is secret). */
export interface BrowserLoginData {
  state: string;
  nonce: string;
  codeVerifier: string;
  redirectUri: string;
  returnTo: string;
  /** ms since the epoch. */
  createdAt: number;
}

/** What a device login keeps between its start and its approval (the device code is secret). */
export interface DeviceLoginData {
  deviceCode: string;
  userCode: string;
  verificationUri: string;
  verificationUriComplete: string | undefined;
  /** ms since the epoch. */
  expiresAt: number;
  intervalS: number;
  /** The session's description: who started it. */
  client: string;
}

export type PendingKind = 'browser' | 'device';
type DataOf<K extends PendingKind> = K extends 'browser' ? BrowserLoginData : DeviceLoginData;

/** Handles are random like every secret; only their hash is stored. */
const HANDLE_PREFIX = 'fpl_';

/**
 * Stores a pending login under the hash of a new random handle (the
 * browser's cookie, or the device login's `device_login`), and returns the
 * handle. Expired pending logins are deleted first. Bounded: at most
 * MAX_PENDING_LOGINS_PER_SOURCE per source address and MAX_PENDING_LOGINS in
 * all (429 `too_many_requests` with Retry-After past either, until one
 * expires). Two concurrent starts may each pass the count: the bound may be
 * exceeded by the number of concurrent starts, never more.
 */
export async function createPendingLogin<K extends PendingKind>(
  q: Queryable,
  kind: K,
  source: string,
  data: DataOf<K>,
  ttlSeconds: number,
): Promise<string> {
  await q.query('DELETE FROM pending_logins WHERE expires_at <= now()');
  const counts = await q.query<{ mine: number; total: number; oldest: number | null }>(
    `SELECT count(*) FILTER (WHERE source = $1)::int AS mine, count(*)::int AS total,
            EXTRACT(EPOCH FROM (min(expires_at) FILTER (WHERE source = $1) - now()))::float8 AS oldest
       FROM pending_logins`,
    [source],
  );
  const c = counts[0];
  if (c && (c.mine >= MAX_PENDING_LOGINS_PER_SOURCE || c.total >= MAX_PENDING_LOGINS)) {
    const retryAfterS = c.mine >= MAX_PENDING_LOGINS_PER_SOURCE && c.oldest !== null ? Math.max(1, Number(c.oldest)) : 60;
    throw new ApiError('too_many_requests', 'too many logins are waiting to finish; retry later', undefined, { retryAfterS });
  }
  const handle = newSecret(HANDLE_PREFIX);
  await q.query(
    `INSERT INTO pending_logins (id_hash, kind, source, data, expires_at, next_poll_at)
     VALUES ($1, $2, $3, $4::text::jsonb, now() + make_interval(secs => $5), now())`,
    [hashSecret(handle), kind, source, JSON.stringify(data), ttlSeconds],
  );
  return handle;
}

/** Takes (reads and deletes) an unexpired pending login of `kind`: a browser login is used once. */
export async function takePendingLogin<K extends PendingKind>(q: Queryable, kind: K, handle: string): Promise<DataOf<K> | undefined> {
  const rows = await q.query<{ data: unknown; live: boolean }>(
    `DELETE FROM pending_logins WHERE id_hash = $1 AND kind = $2 RETURNING data, expires_at > now() AS live`,
    [hashSecret(handle), kind],
  );
  const row = rows[0];
  return row && row.live === true ? parseData<K>(row.data) : undefined;
}

/** What a device poll may do now. */
export type DevicePollSlot<D> =
  /** Ask the issuer now (no other replica does until the interval passed). */
  | { readonly status: 'poll'; readonly data: D }
  /** Polled sooner than the interval: the interval grows by 5 s for good (RFC 8628 §3.5). */
  | { readonly status: 'too_soon' }
  | { readonly status: 'unknown' };

/**
 * Claims the next token request of a device login: atomically, only when
 * the last one (from any replica) is at least 80% of the interval ago
 * (slack for the client's timer and the network). A poll sooner than that
 * grows the stored interval by 5 s, as the client does on `slow_down`.
 */
export async function claimDevicePoll(q: Queryable, handle: string): Promise<DevicePollSlot<DeviceLoginData>> {
  const hash = hashSecret(handle);
  const rows = await q.query<{ data: unknown }>(
    `UPDATE pending_logins SET next_poll_at = now() + make_interval(secs => (data->>'intervalS')::float8 * 0.8)
      WHERE id_hash = $1 AND kind = 'device' AND expires_at > now() AND next_poll_at <= now()
      RETURNING data`,
    [hash],
  );
  if (rows[0]) return { status: 'poll', data: parseData<'device'>(rows[0].data) };
  const slowed = await q.query(
    `UPDATE pending_logins SET data = jsonb_set(data, '{intervalS}', to_jsonb((data->>'intervalS')::int + 5)),
            next_poll_at = next_poll_at + make_interval(secs => 5)
      WHERE id_hash = $1 AND kind = 'device' AND expires_at > now() RETURNING 1 AS one`,
    [hash],
  );
  return slowed.length > 0 ? { status: 'too_soon' } : { status: 'unknown' };
}

/** The issuer answered `slow_down`: the interval grows by 5 s for good. */
export async function slowDownDeviceLogin(q: Queryable, handle: string): Promise<void> {
  await q.query(
    `UPDATE pending_logins SET data = jsonb_set(data, '{intervalS}', to_jsonb((data->>'intervalS')::int + 5)),
            next_poll_at = now() + make_interval(secs => ((data->>'intervalS')::int + 5) * 0.8)
      WHERE id_hash = $1 AND kind = 'device'`,
    [hashSecret(handle)],
  );
}

/** Ends a pending login (used, refused or expired at the issuer). */
export async function deletePendingLogin(q: Queryable, handle: string): Promise<void> {
  await q.query('DELETE FROM pending_logins WHERE id_hash = $1', [hashSecret(handle)]);
}

function parseData<K extends PendingKind>(raw: unknown): DataOf<K> {
  // Written by createPendingLogin only (the column is this module's): the shape is known.
  return jsonColumn<DataOf<K>>(raw);
}
