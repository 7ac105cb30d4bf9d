/**
 * Device tokens over time (docs/protocol.md "Device tokens over time"): a
 * device renews its own token; admins read when each device's token expires.
 * Nothing here touches the device object: a renewal is no change any watcher
 * sees.
 */
import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/index.js';
import { SECRET_PREFIX, type DeviceTokenExpiry, type DeviceTokenRenewal } from '../../protocol/index.js';
import { ApiError, notFound } from '../errors.js';
import { requireOrg } from './org-write.js';
import { hashSecret, newSecret } from './secrets.js';
import { recordAudit } from '../audit/record.js';

/**
 * Valid tokens one device may hold at once. A renewing agent holds one, or
 * two during an overlap; the bound keeps a device that renews in a loop from
 * growing the tokens table (it gets 429 until an overlap ends).
 */
export const MAX_VALID_DEVICE_TOKENS = 4;

/** Expired tokens of a renewing device are deleted this long after their expiry (the revocation follower reads back 60 s). */
const EXPIRED_KEPT_SECONDS = 3_600;

export interface RenewedDeviceToken extends DeviceTokenRenewal {
  tokenId: string;
  /** The device's other tokens whose expiry the renewal brought forward: the token index must learn it. */
  shortened: { id: string; expiresAt: number }[];
}

const iso = (v: unknown): string => new Date(v as string).toISOString();

/**
 * Locks the device's row for the transaction, so that a change to its tokens
 * and a delete of the device never both succeed, and answers its hostname
 * (what names its tokens' audit entries); 404 when it (or its organization)
 * is gone.
 */
async function lockLiveDevice(tx: Queryable, orgId: string, deviceId: string): Promise<{ hostname: string | null }> {
  const device = await tx.query<{ hostname: string | null }>(
    `SELECT o.value->>'hostname' AS hostname FROM objects o JOIN orgs g ON g.id = o.org_id
      WHERE o.id = $1 AND o.org_id = $2 AND o.kind = 'device' AND NOT o.deleted AND g.deleted_at IS NULL
      FOR UPDATE OF o`,
    [deviceId, orgId],
  );
  const row = device[0];
  if (!row) throw notFound('device');
  return row;
}

/**
 * Issues a new token for `deviceId` (expiring `ttlSeconds` from now, 0:
 * never) and brings every other valid token of the device forward to expire
 * within `overlapSeconds` (never later than it would have). The device's row
 * is locked, so a renewal and a delete of the device never both succeed.
 * 404 when the device is gone; 429 when it holds MAX_VALID_DEVICE_TOKENS.
 */
export async function renewDeviceToken(
  db: Database,
  orgId: string,
  deviceId: string,
  ttlSeconds: number,
  overlapSeconds: number,
): Promise<RenewedDeviceToken> {
  return db.transaction(async (tx) => {
    const device = await lockLiveDevice(tx, orgId, deviceId);
    const valid = await tx.query<{ n: number; next_s: number | null }>(
      `SELECT count(*)::int AS n, EXTRACT(EPOCH FROM min(expires_at) - now())::float8 AS next_s FROM tokens
        WHERE device_id = $1 AND kind = 'device' AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
      [deviceId],
    );
    const held = valid[0];
    if (held && Number(held.n) >= MAX_VALID_DEVICE_TOKENS) {
      throw new ApiError('too_many_requests', `the device holds ${MAX_VALID_DEVICE_TOKENS} valid tokens; renew again once one expired`, undefined, {
        retryAfterS: Math.max(1, Number(held.next_s ?? overlapSeconds)),
      });
    }
    await tx.query(
      `DELETE FROM tokens WHERE device_id = $1 AND kind = 'device' AND expires_at < now() - make_interval(secs => $2::float8)`,
      [deviceId, EXPIRED_KEPT_SECONDS],
    );
    const shortened = await tx.query<{ id: string; expires_at: unknown }>(
      `UPDATE tokens SET expires_at = LEAST(COALESCE(expires_at, 'infinity'::timestamptz), now() + make_interval(secs => $2::float8))
        WHERE device_id = $1 AND kind = 'device' AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
        RETURNING id, expires_at`,
      [deviceId, overlapSeconds],
    );
    const secret = newSecret(SECRET_PREFIX.deviceToken);
    const tokenId = randomUUID();
    const rows = await tx.query<{ expires_at: unknown; created_at: unknown }>(
      `INSERT INTO tokens (id, secret_hash, kind, org_id, device_id, role, description, expires_at)
       SELECT $1, $2, 'device', $3, $4, 'device', d.description,
              CASE WHEN $5::float8 > 0 THEN now() + make_interval(secs => $5::float8) END
         FROM (SELECT COALESCE((SELECT description FROM tokens WHERE device_id = $4 AND kind = 'device' ORDER BY created_at DESC LIMIT 1), '') AS description) d
       RETURNING expires_at, created_at`,
      [tokenId, hashSecret(secret), orgId, deviceId, ttlSeconds],
    );
    const row = rows[0];
    if (!row) throw new Error('inserting the renewed device token returned no row');
    await recordAudit(tx, { orgId, action: 'renew', kind: 'device_token', objectId: deviceId, objectName: device.hostname, details: { token_id: tokenId } });
    return {
      device_token: secret,
      expires_at: row.expires_at === null || row.expires_at === undefined ? null : iso(row.expires_at),
      issued_at: iso(row.created_at),
      tokenId,
      shortened: shortened.map((r) => ({ id: r.id, expiresAt: new Date(r.expires_at as string).getTime() })),
    };
  });
}

/**
 * Expires the device's key: revokes every token it holds, so it stops
 * authenticating and its streams and tunnel end (`forbidden`); the device
 * stays, and its agent must enroll again (with a registration key) to come
 * back, as after Tailscale's "expire key". Returns the revoked token ids
 * (none when it held none valid). 404 when the device is gone.
 */
export async function expireDeviceTokens(db: Database, orgId: string, deviceId: string): Promise<string[]> {
  return db.transaction(async (tx) => {
    const device = await lockLiveDevice(tx, orgId, deviceId);
    const rows = await tx.query<{ id: string }>(
      `UPDATE tokens SET revoked_at = now()
        WHERE device_id = $1 AND kind = 'device' AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
        RETURNING id`,
      [deviceId],
    );
    const ids = rows.map((r) => r.id);
    await recordAudit(tx, { orgId, action: 'revoke', kind: 'device_token', objectId: deviceId, objectName: device.hostname, details: { tokens: ids.length } });
    return ids;
  });
}

export interface ExpiryPage {
  items: DeviceTokenExpiry[];
  /** The last device id of a full page: pass it as `after` for the next. */
  next: string | undefined;
}

/**
 * Each live device of the organization with its token's expiry: the latest
 * expiry among its unrevoked tokens (expired ones included, so an expired
 * device shows), by device id. `withinSeconds`: only those expiring within
 * it from now. One statement.
 */
export async function listDeviceTokenExpiries(
  q: Queryable,
  orgId: string,
  opts: { withinSeconds?: number | undefined; after?: string | undefined; limit: number },
): Promise<ExpiryPage> {
  await requireOrg(q, orgId);
  const rows = await q.query<{ device_id: string; hostname: string; expires_at: unknown; issued_at: unknown }>(
    `SELECT o.id AS device_id, o.value->>'hostname' AS hostname, t.expires_at, t.created_at AS issued_at
       FROM objects o
       LEFT JOIN LATERAL (
         SELECT expires_at, created_at FROM tokens
          WHERE device_id = o.id AND kind = 'device' AND revoked_at IS NULL
          ORDER BY expires_at DESC NULLS FIRST LIMIT 1
       ) t ON true
      WHERE o.org_id = $1 AND o.kind = 'device' AND NOT o.deleted
        AND ($2::float8 IS NULL OR t.expires_at <= now() + make_interval(secs => $2::float8))
        AND ($3::uuid IS NULL OR o.id > $3::uuid)
      ORDER BY o.id
      LIMIT $4`,
    [orgId, opts.withinSeconds ?? null, opts.after ?? null, opts.limit + 1],
  );
  const page = rows.slice(0, opts.limit);
  const items = page.map((r) => ({
    device_id: r.device_id,
    hostname: r.hostname,
    expires_at: r.expires_at === null || r.expires_at === undefined ? null : iso(r.expires_at),
    issued_at: r.issued_at === null || r.issued_at === undefined ? null : iso(r.issued_at),
  }));
  return { items, next: rows.length > opts.limit ? page[page.length - 1]?.device_id : undefined };
}
