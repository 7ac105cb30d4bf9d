import { UsageError } from '../../exit-codes.js';
import {
  AuthError,
  NotFoundError,
  PeerNames,
  formatBytes,
  type DeviceCreate,
  type DeviceObject,
  type DevicePatch,
  type DeviceStatus,
  type DeviceTokenExpiry,
  type PeerPath,
} from '../../../client/index.js';
import { age } from '../age.js';
import { durationSeconds, until } from '../duration.js';
import type { CommandGroup } from '../command-spec.js';
import type { CtlContext } from '../context.js';
import { defined, listFlag } from '../flag-values.js';
import { watchList } from '../list-watch.js';
import { rpcCommand } from '../rpc.js';
import { approveRoutesCommand, unapprovedRoutes } from './approve-routes.js';
import { expireKeyCommand } from './expire-key.js';
import { crudCommands, type CrudSpec } from './crud.js';
import { describeObject } from '../describe.js';
import { cell, formatTable } from '../table.js';
import { orgDevices, resolveDevice } from './device-ref.js';
import { resolveSecurityGroup } from './security-groups.js';

/**
 * A device as REST lists it; under `--watch`, the watch form with the status
 * of the last listing, if any. `token_expires_at` (not a device field: token
 * expiries live apart, so a renewal changes no device) is joined in by `list`
 * for `-o wide` and `--expiring-within`; `head_revision` (the organization's
 * revision the listing is consistent with) for tables only.
 */
export type DeviceRow = DeviceObject & { status?: DeviceStatus | undefined; token_expires_at?: string | null | undefined; head_revision?: number | undefined };

const org = async (ctx: CtlContext) => (await ctx.org()).id;

async function securityGroupField(ctx: CtlContext): Promise<string | null | undefined> {
  const ref = ctx.flags.string('security-group');
  if (ref === undefined) return undefined;
  return ref === '' ? null : resolveSecurityGroup(ctx, ref);
}

/** `--approved-routes`: the whole approved list, as an admin approves a device's requested routes. */
function approvedRoutesField(ctx: CtlContext): string[] | undefined {
  const text = ctx.flags.string('approved-routes');
  if (text === undefined) return undefined;
  return text.split(',').map((c) => c.trim()).filter((c) => c !== '');
}

/** `--relay true|false`: whether the device is the organization's relay device (docs/protocol.md "Paths between peers"). */
function relayField(ctx: CtlContext): boolean | undefined {
  const text = ctx.flags.string('relay');
  if (text === undefined) return undefined;
  if (text === 'true' || text === 'false') return text === 'true';
  throw new UsageError(`--relay: expected true or false, got ${JSON.stringify(text)}`);
}

/**
 * The listing, with each device's token expiry when wide or filtered by
 * `--expiring-within`. Only admins may read expiries: a wide listing with
 * another token (or from a server before v1.5) leaves the column empty; the
 * filter fails.
 */
async function listDevices(ctx: CtlContext): Promise<DeviceRow[]> {
  const o = await org(ctx);
  const within = ctx.flags.string('expiring-within');
  const page = await ctx.client.devices.list(o, { signal: ctx.signal });
  // Only tables show the head; a document stays the devices as the server sent them.
  const rows: DeviceRow[] = ctx.out.forPeople ? page.items.map((d) => ({ ...d, head_revision: page.revision })) : page.items;
  if (within === undefined && ctx.out.mode !== 'wide') return rows;
  const expiringWithin = within === undefined ? undefined : durationSeconds('expiring-within', within);
  let expiries: DeviceTokenExpiry[];
  try {
    expiries = await ctx.client.devices.tokenExpiries(o, { expiringWithin, signal: ctx.signal });
  } catch (err) {
    // A wide listing still works for a token that may not read expiries, or a server before v1.5 (404).
    if (within === undefined && (err instanceof AuthError || err instanceof NotFoundError)) return rows;
    throw err;
  }
  const byDevice = new Map(expiries.map((e) => [e.device_id, e.expires_at]));
  const joined = rows.map((d) => ({ ...d, token_expires_at: byDevice.get(d.id) }));
  return within === undefined ? joined : joined.filter((d) => byDevice.has(d.id));
}

/**
 * APPLIED: the organization revision the agent applied, against the head the
 * listing was taken at (`14 (head)`, `12 (head 14)`); just the revision
 * where the head is unknown (watch rows, a server without the header).
 */
export function appliedCell(d: DeviceRow): string | undefined {
  const applied = d.status?.applied_revision;
  if (applied === null || applied === undefined) return undefined;
  if (d.head_revision === undefined) return String(applied);
  return applied === d.head_revision ? `${applied} (head)` : `${applied} (head ${d.head_revision})`;
}

/** The PEERS table: each peer by hostname (`-` when no device of the organization is that peer), its path and traffic. */
export function formatPeers(peers: readonly PeerPath[], names: PeerNames, now: number): string {
  const rows = peers.map((p) => [
    names.hostnameOf(p) ?? '-',
    names.pathOf(p),
    cell(p.endpoint),
    p.latest_handshake === null ? 'never' : `${age(p.latest_handshake, now)} ago`,
    formatBytes(p.rx_bytes),
    formatBytes(p.tx_bytes),
  ]);
  return formatTable(['HOSTNAME', 'PATH', 'ENDPOINT', 'HANDSHAKE', 'RX', 'TX'], rows);
}

/** The device's fields after its id and hostname, for people (describe.ts places the rest); `device_token` is in a create's answer only. */
const DEVICE_FIELDS = [
  'tunnel_ip',
  'device_token',
  'public_key',
  'security_group_id',
  'tags',
  'endpoints',
  'advertise_cidrs',
  'approved_cidrs',
  'relay',
  'symmetric_nat',
  'ephemeral',
  'organization_id',
  'status',
];

/**
 * `devices get` for people: the device's fields in DEVICE_FIELDS' order,
 * its status as a YAML block but for the peers, then the PEERS table
 * (hostnames looked up among the organization's devices, listed only when
 * there are peers to name).
 */
async function showDevice(ctx: CtlContext, d: DeviceRow): Promise<void> {
  const { status, token_expires_at: _expires, head_revision: _head, ...fields } = d;
  // Servers before v1.9 send no peers.
  const peers: readonly PeerPath[] = status?.peers ?? [];
  let observed: Omit<DeviceStatus, 'peers' | 'peers_truncated'> | undefined;
  if (status) {
    const { peers: _peers, peers_truncated: _truncated, ...rest } = status;
    observed = rest;
  }
  const out = [describeObject({ ...fields, status: observed }, DEVICE_FIELDS)];
  if (peers.length === 0) out.push('\npeers: none reported\n');
  else {
    const names = new PeerNames(await orgDevices(ctx));
    const shown = status?.peers_truncated === true ? ` (the ${peers.length} most recently active; the device has more)` : '';
    out.push(`\npeers${shown}:\n`, formatPeers(peers, names, ctx.out.now()));
  }
  ctx.out.writer.write(out.join(''));
}

const devices: CrudSpec<DeviceRow> = {
  noun: 'device',
  ref: '<device>',
  refHelp: 'its hostname, tunnel IP or id',
  scoped: true,
  columns: [
    { header: 'ID', value: (d) => d.id },
    { header: 'HOSTNAME', value: (d) => d.hostname },
    { header: 'TUNNEL IP', value: (d) => d.tunnel_ip },
    { header: 'ONLINE', value: (d) => d.status?.online },
    { header: 'LAST SEEN', value: (d, now) => (d.status ? age(d.status.last_seen, now) : undefined) },
    { header: 'APPLIED', value: appliedCell },
    // The device object's own revision (what --if-match takes), easily mistaken for the organization's next to APPLIED: wide only, named for what it is.
    { header: 'OBJ-REV', value: (d) => d.revision, wide: true },
    { header: 'PUBLIC KEY', value: (d) => d.public_key, wide: true },
    { header: 'SECURITY GROUP', value: (d) => d.security_group_id, wide: true },
    // Devices listed by a server before v1.12 carry no tags.
    { header: 'TAGS', value: (d) => (d.tags ?? []).join(','), wide: true },
    { header: 'AGENT', value: (d) => d.status?.agent_version, wide: true },
    { header: 'ENDPOINTS', value: (d) => d.endpoints.map((e) => e.address).join(','), wide: true },
    { header: 'PENDING ROUTES', value: (d) => unapprovedRoutes(d).join(','), wide: true },
    { header: 'APPLY ERROR', value: (d) => d.status?.apply_error, wide: true },
    { header: 'EPHEMERAL', value: (d) => d.ephemeral, wide: true },
    { header: 'TOKEN EXPIRES', value: (d, now) => (d.token_expires_at === undefined ? undefined : until(d.token_expires_at, now)), wide: true },
  ],
  listDetails: [
    'Columns: APPLIED is the organization revision the agent last applied, with the head the listing was',
    'taken at: "14 (head)" is up to date, "12 (head 14)" is behind (ctl status counts them); - before the',
    "first report. -o wide adds OBJ-REV, the revision of the device object itself (its last change: what",
    '--if-match takes), PUBLIC KEY, SECURITY GROUP, TAGS, AGENT, ENDPOINTS, PENDING ROUTES, APPLY ERROR,',
    'EPHEMERAL and TOKEN EXPIRES.',
  ].join('\n'),
  fieldOrder: DEVICE_FIELDS,
  listFlags: ['expiring-within'],
  fieldFlags: ['hostname', 'public-key', 'security-group', 'tags', 'approved-routes', 'relay'],
  fields: async (ctx) =>
    defined({
      hostname: ctx.flags.string('hostname'),
      public_key: ctx.flags.string('public-key'),
      security_group_id: await securityGroupField(ctx),
      tags: listFlag(ctx.flags.string('tags')),
      approved_cidrs: approvedRoutesField(ctx),
      relay: relayField(ctx),
    }),
  list: listDevices,
  resolve: resolveDevice,
  get: async (ctx, id) => ctx.client.devices.get(await org(ctx), id, { signal: ctx.signal }),
  show: showDevice,
  create: async (ctx, body) => ctx.client.devices.create(await org(ctx), body as DeviceCreate, { signal: ctx.signal }),
  update: async (ctx, id, body, ifMatch) => ctx.client.devices.update(await org(ctx), id, body as DevicePatch, { signal: ctx.signal, ifMatch }),
  remove: async (ctx, id, ifMatch) => ctx.client.devices.delete(await org(ctx), id, { signal: ctx.signal, ifMatch }),
  // Watch events carry no status (it changes no revision): rows show the status of the listing taken when the watch starts.
  watch: async (ctx) => {
    const o = await ctx.org();
    const listed = await ctx.client.devices.list(o.id, { signal: ctx.signal });
    const statuses = new Map(listed.items.map((d) => [d.id, d.status]));
    await watchList(ctx, o, 'device', devices.columns, (d): DeviceRow => ({ ...d, status: statuses.get(d.id) }));
  },
  summaries: {
    list: 'list the devices of an organization, with ONLINE and LAST SEEN (-o wide: TOKEN EXPIRES; --expiring-within: only those expiring soon)',
    get: 'show one device and the path to each of its peers (direct or relayed, last handshake, bytes)',
    create: 'pre-provision a device (prints its device token once)',
    update: 'change a device (hostname, public key, security group, approved routes, or --data)',
    delete: "delete a device (revokes its token)",
  },
  examples: {
    list: [
      'fleetplane ctl devices list --org acme',
      'fleetplane ctl devices list --org acme -o wide',
      'fleetplane ctl devices list --org acme --watch',
      'fleetplane ctl devices list --org acme --expiring-within 7d',
    ],
    get: ['fleetplane ctl devices get web-1 --org acme', 'fleetplane ctl devices get 100.64.0.7 --org acme -o yaml'],
    create: ['fleetplane ctl devices create --org acme --hostname web-1 --public-key "$(wg pubkey < key)" --security-group web'],
    update: [
      'fleetplane ctl devices update web-1 --org acme --security-group web',
      'fleetplane ctl devices update web-1 --org acme --security-group ""',
      'fleetplane ctl devices update router-1 --org acme --approved-routes 10.20.0.0/16,fd00:20::/48',
    ],
    delete: ['fleetplane ctl devices delete web-1 --org acme'],
  },
};

export const devicesGroup: CommandGroup = {
  name: 'devices',
  aliases: ['device', 'dev'],
  summary: 'devices: the machines of an organization',
  commands: [...crudCommands(devices), approveRoutesCommand, expireKeyCommand, rpcCommand],
};
