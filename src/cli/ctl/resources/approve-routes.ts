import { ConflictError, type Device, type DeviceObject } from '../../../client/index.js';
import { cidrNetwork, routePrefix } from '../../../protocol/wire.js';
import { UsageError } from '../../exit-codes.js';
import type { RemoteCommand } from '../command-spec.js';
import type { CtlContext } from '../context.js';
import { noExtraArgs, requireArg } from '../flag-values.js';
import { resolveDevice } from './device-ref.js';

/** Conditional writes tried before giving up on a device that keeps changing. */
const ATTEMPTS = 5;

/** What `approve-routes` prints for scripts (`-o json|yaml`). */
export interface ApprovedRoutes {
  id: string;
  hostname: string;
  revision: number;
  /** The device's approved routes after the command, as the server holds them. */
  approved_cidrs: string[];
  /** Routes the device requests that are still not approved. */
  unapproved_cidrs: string[];
}

const prefix = (cidr: string): string => cidrNetwork(cidr) ?? cidr;

/** CIDRS: comma separated, each a CIDR without host bits (else a usage error, before any request), written canonically. */
function parseRoutes(text: string): string[] {
  const routes = text.split(',').map((c) => c.trim()).filter((c) => c !== '');
  if (routes.length === 0) throw new UsageError('CIDRS is empty: give routes such as 10.20.0.0/16, or --all');
  return routes.map((text) => {
    const route = routePrefix(text);
    if ('problem' in route) throw new UsageError(route.problem);
    return route.network;
  });
}

/** `approved` plus each of `wanted` it lacks (compared as prefixes), in order; undefined when it lacks none. */
function withRoutes(approved: readonly string[], wanted: readonly string[]): string[] | undefined {
  const have = new Set(approved.map(prefix));
  const added = wanted.filter((cidr) => {
    const p = prefix(cidr);
    if (have.has(p)) return false;
    have.add(p);
    return true;
  });
  return added.length === 0 ? undefined : [...approved, ...added];
}

/** The routes `d` requests that are not approved, compared as prefixes (`-o wide`'s PENDING ROUTES too). */
export function unapprovedRoutes(d: Pick<DeviceObject, 'advertise_cidrs' | 'approved_cidrs'>): string[] {
  // Objects from servers before route approval have no approved list.
  const approved = new Set((d.approved_cidrs ?? []).map(prefix));
  return d.advertise_cidrs.filter((c) => !approved.has(prefix(c)));
}

function summary(d: Device): ApprovedRoutes {
  return { id: d.id, hostname: d.hostname, revision: d.revision, approved_cidrs: d.approved_cidrs, unapproved_cidrs: unapprovedRoutes(d) };
}

/**
 * Reads the device and adds the routes, conditionally on its revision
 * (If-Match): when another write came first (412), reads it again, so that
 * write is kept rather than overwritten. The last 412 is thrown after
 * ATTEMPTS tries.
 */
async function approve(ctx: CtlContext, org: string, id: string, routes: readonly string[] | 'all'): Promise<Device> {
  for (let attempt = 1; ; attempt++) {
    const device = await ctx.client.devices.get(org, id, { signal: ctx.signal });
    const next = withRoutes(device.approved_cidrs, routes === 'all' ? device.advertise_cidrs : routes);
    if (next === undefined) return device;
    try {
      return await ctx.client.devices.update(org, id, { approved_cidrs: next }, { signal: ctx.signal, ifMatch: device.revision });
    } catch (err) {
      if (!(err instanceof ConflictError && err.code === 'precondition_failed') || attempt >= ATTEMPTS) throw err;
    }
  }
}

/** `devices approve-routes <device> (CIDRS | --all)`: adds to the device's approved routes. */
export const approveRoutesCommand: RemoteCommand = {
  kind: 'remote',
  name: 'approve-routes',
  args: '<device> [CIDRS]',
  summary: "approve routes a device requests (--advertise-routes), adding to its approved routes; prints what stays unapproved",
  details: [
    '<device>: its hostname, tunnel IP or id. CIDRS: comma separated routes to add to its approved routes,',
    'each a network without host bits (10.20.0.0/16, not 10.20.0.1/16); --all: every route it requests now.',
    'One of the two is required: a command line that names no route approves nothing (as kubectl needs --all).',
    'Peers route a prefix to the device while it both requests and has it approved; a route may be approved',
    'before it is requested. The write is conditional on the revision read (If-Match): a change made',
    `meanwhile is read again and kept (up to ${ATTEMPTS} tries). Prints the approved routes and the requested`,
    'ones still unapproved. To withdraw approvals, set the whole list: devices update <device> --approved-routes CIDRS.',
  ].join('\n'),
  flags: ['org', 'all', 'output'],
  examples: [
    'fleetplane ctl devices approve-routes router-1 10.20.0.0/16,192.168.5.0/24 --org acme',
    'fleetplane ctl devices approve-routes router-1 --all --org acme',
  ],
  async run(ctx, args) {
    noExtraArgs(args, 2);
    const ref = requireArg(args[0], '<device>');
    const all = ctx.flags.boolean('all') === true;
    if (all && args[1] !== undefined) throw new UsageError('give CIDRS or --all, not both');
    if (!all && args[1] === undefined) throw new UsageError('missing CIDRS (comma separated routes), or --all to approve every route the device requests');
    const routes = all ? 'all' : parseRoutes(args[1] ?? '');
    const org = (await ctx.org()).id;
    const id = await resolveDevice(ctx, ref);
    const result = summary(await approve(ctx, org, id, routes));
    const list = (cidrs: readonly string[]): string => (cidrs.length === 0 ? 'none' : cidrs.join(', '));
    if (!ctx.out.forPeople) return ctx.out.document(result);
    ctx.out.line(`approved routes of device ${result.hostname} (${result.id}): ${list(result.approved_cidrs)}`);
    ctx.out.line(`requested, not approved: ${list(result.unapproved_cidrs)}`);
  },
};
