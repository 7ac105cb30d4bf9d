/**
 * Route approval (docs/protocol.md "Routes"): a device requests routes in
 * `advertise_cidrs`, agents apply only those an organization admin approved
 * in `approved_cidrs`. A route one device could claim by itself would let any
 * enrolled device take traffic from the route's real owner (issue 12). The
 * organization's network-wide routes are held to the same tunnel pool rule.
 */
import type { Queryable } from '../db/index.js';
import { cidrNetwork, hasHostBits, ipv6Groups, parseCidr, parseIpv4, type DevicePatch, type IpFamily, type Network } from '../../protocol/index.js';
import { ApiError, validationFailed } from '../errors.js';

interface Prefix {
  family: IpFamily;
  /** The network address with host bits cleared, so equal prefixes compare equal however they were written. */
  network: bigint;
  length: number;
}

const BITS: Record<IpFamily, number> = { 4: 32, 6: 128 };

function prefixOf(cidr: string): Prefix | undefined {
  const parsed = parseCidr(cidr);
  if (!parsed) return undefined;
  let value = 0n;
  if (parsed.family === 4) value = BigInt(parseIpv4(parsed.address) ?? 0);
  else for (const group of ipv6Groups(parsed.address)) value = (value << 16n) | BigInt(group);
  const host = BigInt(BITS[parsed.family] - parsed.prefix);
  return { family: parsed.family, network: (value >> host) << host, length: parsed.prefix };
}

/** True when `outer` contains `inner`, equal prefixes included. */
function contains(outer: Prefix, inner: Prefix): boolean {
  if (outer.family !== inner.family || outer.length > inner.length) return false;
  const host = BigInt(BITS[outer.family] - outer.length);
  return inner.network >> host === outer.network >> host;
}

const overlaps = (a: Prefix, b: Prefix): boolean => contains(a, b) || contains(b, a);
const same = (a: Prefix, b: Prefix): boolean => a.family === b.family && a.length === b.length && a.network === b.network;

function prefixes(cidrs: readonly string[]): Prefix[] {
  return cidrs.map(prefixOf).filter((p): p is Prefix => p !== undefined);
}

/**
 * Refuses (400 `validation_failed`, `details.path` the entry) a route
 * written with host bits set (`10.20.0.1/16`): it names an address inside a
 * network, not the network a route is for, and `expected` says the prefix
 * it should be (`10.20.0.0/16`), as Tailscale does. Only what the request
 * writes is checked: a route stored before this check never fails a write
 * that leaves it alone.
 */
function refuseHostBits(cidrs: readonly string[] | undefined, path: (index: number) => string): void {
  for (const [index, cidr] of (cidrs ?? []).entries()) {
    if (hasHostBits(cidr)) throw validationFailed(path(index), `a prefix without host bits: ${cidrNetwork(cidr) ?? cidr} (${cidr} has host bits set)`);
  }
}

/** The route prefixes a device write sets (`advertise_cidrs`, `approved_cidrs`), checked as refuseHostBits says. */
export function checkDevicePrefixes(input: DevicePatch): void {
  refuseHostBits(input.advertise_cidrs, (i) => `/advertise_cidrs/${i}`);
  refuseHostBits(input.approved_cidrs, (i) => `/approved_cidrs/${i}`);
}

/** The route prefixes an organization write sets (`network.routes[].destination`, `network.auto_approve_cidrs`), checked as refuseHostBits says. */
export function checkNetworkPrefixes(network: Partial<Network> | undefined): void {
  refuseHostBits(network?.routes?.map((r) => r.destination), (i) => `/network/routes/${i}/destination`);
  refuseHostBits(network?.auto_approve_cidrs, (i) => `/network/auto_approve_cidrs/${i}`);
  refuseHostBits(network?.auto_approvers?.map((a) => a.cidr), (i) => `/network/auto_approvers/${i}/cidr`);
}

/**
 * The routes approved after a write: the admin's explicit list (or the
 * current one), plus each route `requested` in this write that lies inside
 * one of the organization's `auto_approve_cidrs`, or inside the `cidr` of one
 * of its `auto_approvers` naming a tag of the device (`tags`, as the write
 * leaves them).
 */
export function nextApprovedCidrs(
  current: readonly string[],
  explicit: readonly string[] | undefined,
  requested: readonly string[] | undefined,
  network: Network,
  tags: readonly string[],
): string[] {
  const approved = [...(explicit ?? current)];
  const byTag = network.auto_approvers.filter((a) => a.tags.some((t) => tags.includes(t))).map((a) => a.cidr);
  const rules = prefixes([...network.auto_approve_cidrs, ...byTag]);
  for (const cidr of requested ?? []) {
    const p = prefixOf(cidr);
    if (!p || !rules.some((rule) => contains(rule, p))) continue;
    if (!prefixes(approved).some((a) => same(a, p))) approved.push(cidr);
  }
  return approved;
}

/** The routes of `after` that `before` does not hold, however either writes them; unparsable ones are the schema's. */
function addedRoutes(before: readonly string[], after: readonly string[]): { cidr: string; p: Prefix; index: number }[] {
  const old = prefixes(before);
  return after.flatMap((cidr, index) => {
    const p = prefixOf(cidr);
    return p && !old.some((o) => same(o, p)) ? [{ cidr, p, index }] : [];
  });
}

/**
 * Refuses (409 `conflict`) a route no agent may apply as a kernel route into
 * the tunnel: a default route (exit nodes are not supported: it overlaps every
 * route and the pool, and would carry the tunnel's own packets), or one
 * overlapping the tunnel pool (it would outrank the interface's own route to
 * the devices' tunnel IPs).
 */
function refuseOutsideTunnel(cidr: string, p: Prefix, network: Network, path: string): void {
  if (p.length === 0) throw new ApiError('conflict', `${cidr} is a default route: exit nodes are not supported`, { path, cidr });
  const pool = prefixOf(network.ipv4_cidr);
  if (pool && overlaps(p, pool)) {
    throw new ApiError('conflict', `${cidr} overlaps the organization's tunnel pool ${network.ipv4_cidr}`, { path, cidr, tunnel_pool: network.ipv4_cidr });
  }
}

/**
 * Refuses (409 `conflict`) a network-wide route (`network.routes`) that is a
 * default route or overlaps the tunnel pool (refuseOutsideTunnel): every
 * agent applies it as a kernel route into the tunnel. Only routes new to the
 * list are checked, unless the pool itself changes, so an unrelated change
 * never fails on stored routes. Covering a device's approved route is what a
 * network route is for (it sends the traffic into the tunnel; the approval
 * picks the peer), so that overlap is allowed.
 */
export function checkNetworkRoutes(before: Network | undefined, after: Network): void {
  const samePool = before !== undefined && before.ipv4_cidr === after.ipv4_cidr;
  const destinations = (n: Network): string[] => n.routes.map((r) => r.destination);
  for (const { cidr, p, index } of addedRoutes(samePool ? destinations(before) : [], destinations(after))) {
    refuseOutsideTunnel(cidr, p, after, `/network/routes/${index}/destination`);
  }
}

/**
 * Refuses (409 `conflict`) a newly approved route that is a default route or
 * overlaps the organization's tunnel pool (refuseOutsideTunnel), or that
 * overlaps a route approved for another device, naming that device. Routes
 * approved before are not checked again, so an unrelated change to a device
 * never fails on old approvals.
 * Runs after the organization's revision is taken: writes of one organization
 * are serialized, so two approvals can't both pass this check.
 */
export async function checkNewApprovals(
  tx: Queryable,
  orgId: string,
  deviceId: string,
  network: Network,
  before: readonly string[],
  after: readonly string[],
  path: string,
): Promise<void> {
  const added = addedRoutes(before, after);
  if (added.length === 0) return;
  for (const { cidr, p } of added) refuseOutsideTunnel(cidr, p, network, path);
  const others = await tx.query<{ id: string; hostname: string; approved: string[] }>(
    `SELECT id, value->>'hostname' AS hostname, value->'approved_cidrs' AS approved FROM objects
      WHERE org_id = $1 AND kind = 'device' AND NOT deleted AND id <> $2
        AND jsonb_array_length(COALESCE(value->'approved_cidrs', '[]'::jsonb)) > 0
      ORDER BY id`,
    [orgId, deviceId],
  );
  for (const { cidr, p } of added) {
    for (const other of others) {
      const taken = other.approved.find((a) => {
        const q = prefixOf(a);
        return q !== undefined && overlaps(p, q);
      });
      if (taken === undefined) continue;
      throw new ApiError('conflict', `${cidr} overlaps ${taken}, approved for device ${other.id} (${other.hostname})`, {
        path,
        cidr,
        device_id: other.id,
        hostname: other.hostname,
        approved_cidr: taken,
      });
    }
  }
}
