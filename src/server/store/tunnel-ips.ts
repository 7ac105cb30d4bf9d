/**
 * Tunnel IP allocation: each device gets the lowest free address of its
 * organization's pool, in time independent of the organization's size.
 *
 * Per organization, `ip_pools` holds the pool's CIDR and `next_ip`, the first
 * address never handed out; `ip_free` holds the addresses below `next_ip`
 * that deleted devices gave back. Every address of the pool below `next_ip`
 * is either in `device_ips` or in `ip_free`, so the lowest free address is
 * the smallest of `ip_free`, else `next_ip`: one index probe, not a scan.
 *
 * Both functions run under the organization's revision lock (org-write.ts),
 * so allocations of one organization never race.
 */
import type { Queryable } from '../db/index.js';
import { ipv4Pool, type Ipv4Pool } from '../../protocol/index.js';
import { ApiError } from '../errors.js';

interface PoolRow {
  cidr: string;
  next_ip: number;
  free_ip: number | null;
}

/**
 * Gives device `deviceId` the lowest free address of `cidr`, its
 * organization's pool, and returns it. 409 when the pool is full.
 */
export async function takeTunnelIp(tx: Queryable, orgId: string, deviceId: string, cidr: string): Promise<number> {
  const ip = await lowestFree(tx, orgId, cidr);
  await tx.query('INSERT INTO device_ips (org_id, ip, device_id) VALUES ($1, $2, $3)', [orgId, ip, deviceId]);
  return ip;
}

async function lowestFree(tx: Queryable, orgId: string, cidr: string): Promise<number> {
  const pool = ipv4Pool(cidr);
  if (!pool) throw new ApiError('internal', 'organization has an invalid ipv4_cidr');
  let row = await readPool(tx, orgId);
  // No row: an organization from before this allocator, or one whose pool moved (allowed only while empty).
  if (!row || row.cidr !== cidr) row = await rebuildPool(tx, orgId, cidr, pool);
  if (row.free_ip !== null) {
    await tx.query('DELETE FROM ip_free WHERE org_id = $1 AND ip = $2', [orgId, row.free_ip]);
    return row.free_ip;
  }
  if (row.next_ip > pool.last) throw new ApiError('conflict', `the pool ${cidr} has no free address`);
  await tx.query('UPDATE ip_pools SET next_ip = next_ip + 1 WHERE org_id = $1', [orgId]);
  return row.next_ip;
}

/** Gives back the address of a deleted device to its organization's pool (no-op if it had none). */
export async function releaseTunnelIp(tx: Queryable, orgId: string, deviceId: string): Promise<void> {
  await tx.query(
    `WITH gone AS (DELETE FROM device_ips WHERE device_id = $2 RETURNING org_id, ip)
     INSERT INTO ip_free (org_id, ip) SELECT org_id, ip FROM gone WHERE org_id = $1`,
    [orgId, deviceId],
  );
}

async function readPool(tx: Queryable, orgId: string): Promise<PoolRow | undefined> {
  const rows = await tx.query<{ cidr: string; next_ip: number | string; free_ip: number | string | null }>(
    `SELECT p.cidr, p.next_ip, (SELECT min(f.ip) FROM ip_free f WHERE f.org_id = p.org_id) AS free_ip
       FROM ip_pools p WHERE p.org_id = $1`,
    [orgId],
  );
  const r = rows[0];
  if (!r) return undefined;
  return { cidr: r.cidr, next_ip: Number(r.next_ip), free_ip: r.free_ip === null ? null : Number(r.free_ip) };
}

/**
 * Derives the pool state from `device_ips` once: `next_ip` just above the
 * highest address in use, and every gap below it free. Runs once per
 * organization (and again only after its pool moves, when it has no devices).
 */
async function rebuildPool(tx: Queryable, orgId: string, cidr: string, pool: Ipv4Pool): Promise<PoolRow> {
  await tx.query('DELETE FROM ip_free WHERE org_id = $1', [orgId]);
  const top = await tx.query<{ max: number | string | null }>('SELECT max(ip) AS max FROM device_ips WHERE org_id = $1', [orgId]);
  const highest = top[0]?.max ?? null;
  const nextIp = highest === null ? pool.first : Number(highest) + 1;
  if (highest !== null) {
    await tx.query(
      `INSERT INTO ip_free (org_id, ip)
         SELECT $1, g FROM generate_series($2::bigint, $3::bigint) AS g
          WHERE NOT EXISTS (SELECT 1 FROM device_ips d WHERE d.org_id = $1 AND d.ip = g)`,
      [orgId, pool.first, nextIp - 1],
    );
  }
  await tx.query(
    `INSERT INTO ip_pools (org_id, cidr, next_ip) VALUES ($1, $2, $3)
       ON CONFLICT (org_id) DO UPDATE SET cidr = EXCLUDED.cidr, next_ip = EXCLUDED.next_ip`,
    [orgId, cidr, nextIp],
  );
  return (await readPool(tx, orgId)) ?? { cidr, next_ip: nextIp, free_ip: null };
}
