import type {
  Device,
  DeviceCreate,
  DevicePatch,
  Organization,
  OrganizationCreate,
  OrganizationPatch,
  SecurityGroup,
  SecurityGroupCreate,
  SecurityGroupPatch,
} from '../../client/index.js';
import { dataFlag, defined, intFlag, requireArg } from './args.js';
import { orgOf, type CtlContext } from './context.js';
import type { Column } from './output.js';
import { UsageError } from './usage.js';

/** How ctl handles one versioned collection. Bodies are sent as given: the server validates them. */
interface ResourceSpec<T extends { id: string }> {
  noun: string;
  columns: ReadonlyArray<Column<T>>;
  /** Body fields taken from flags (undefined ones are dropped). */
  flags(values: CtlContext['args']['values']): Record<string, unknown>;
  list(ctx: CtlContext): Promise<T[]>;
  get(ctx: CtlContext, id: string): Promise<T>;
  create(ctx: CtlContext, body: Record<string, unknown>): Promise<T>;
  update(ctx: CtlContext, id: string, body: Record<string, unknown>, ifMatch: number | undefined): Promise<T>;
  remove(ctx: CtlContext, id: string, ifMatch: number | undefined): Promise<void>;
}

const opts = (ctx: CtlContext) => ({ signal: ctx.signal });
const cond = (ctx: CtlContext, ifMatch: number | undefined) => ({ signal: ctx.signal, ifMatch });

const organizations: ResourceSpec<Organization> = {
  noun: 'organization',
  columns: [
    { header: 'ID', value: (o) => o.id },
    { header: 'NAME', value: (o) => o.name },
    { header: 'CIDR', value: (o) => o.network.ipv4_cidr },
    { header: 'MTU', value: (o) => o.network.mtu },
    { header: 'REVISION', value: (o) => o.revision },
    { header: 'DESCRIPTION', value: (o) => o.description },
  ],
  flags: (v) => defined({ name: v.name, description: v.description }),
  list: async (ctx) => (await ctx.client.organizations.list(opts(ctx))).items,
  get: (ctx, id) => ctx.client.organizations.get(id, opts(ctx)),
  create: (ctx, body) => ctx.client.organizations.create(body as OrganizationCreate, opts(ctx)),
  update: (ctx, id, body, ifMatch) => ctx.client.organizations.update(id, body as OrganizationPatch, cond(ctx, ifMatch)),
  remove: (ctx, id, ifMatch) => ctx.client.organizations.delete(id, cond(ctx, ifMatch)),
};

const devices: ResourceSpec<Device> = {
  noun: 'device',
  columns: [
    { header: 'ID', value: (d) => d.id },
    { header: 'HOSTNAME', value: (d) => d.hostname },
    { header: 'TUNNEL IP', value: (d) => d.tunnel_ip },
    { header: 'ONLINE', value: (d) => d.status?.online ?? false },
    { header: 'APPLIED', value: (d) => d.status?.applied_revision },
    { header: 'REVISION', value: (d) => d.revision },
  ],
  flags: (v) => defined({ hostname: v.hostname, public_key: v['public-key'] }),
  list: async (ctx) => (await ctx.client.devices.list(orgOf(ctx), opts(ctx))).items,
  get: (ctx, id) => ctx.client.devices.get(orgOf(ctx), id, opts(ctx)),
  create: (ctx, body) => ctx.client.devices.create(orgOf(ctx), body as DeviceCreate, opts(ctx)),
  update: (ctx, id, body, ifMatch) => ctx.client.devices.update(orgOf(ctx), id, body as DevicePatch, cond(ctx, ifMatch)),
  remove: (ctx, id, ifMatch) => ctx.client.devices.delete(orgOf(ctx), id, cond(ctx, ifMatch)),
};

const securityGroups: ResourceSpec<SecurityGroup> = {
  noun: 'security group',
  columns: [
    { header: 'ID', value: (g) => g.id },
    { header: 'INBOUND', value: (g) => g.inbound_rules.length },
    { header: 'OUTBOUND', value: (g) => g.outbound_rules.length },
    { header: 'REVISION', value: (g) => g.revision },
    { header: 'DESCRIPTION', value: (g) => g.description },
  ],
  flags: (v) => defined({ description: v.description }),
  list: async (ctx) => (await ctx.client.securityGroups.list(orgOf(ctx), opts(ctx))).items,
  get: (ctx, id) => ctx.client.securityGroups.get(orgOf(ctx), id, opts(ctx)),
  create: (ctx, body) => ctx.client.securityGroups.create(orgOf(ctx), body as SecurityGroupCreate, opts(ctx)),
  update: (ctx, id, body, ifMatch) => ctx.client.securityGroups.update(orgOf(ctx), id, body as SecurityGroupPatch, cond(ctx, ifMatch)),
  remove: (ctx, id, ifMatch) => ctx.client.securityGroups.delete(orgOf(ctx), id, cond(ctx, ifMatch)),
};

export type ResourceCommand = (ctx: CtlContext, verb: string | undefined, rest: string[]) => Promise<void>;

/** Resource names ctl accepts, with their aliases. */
export const RESOURCES: Readonly<Record<string, ResourceCommand>> = {
  orgs: (ctx, verb, rest) => runResource(ctx, organizations, verb, rest),
  organizations: (ctx, verb, rest) => runResource(ctx, organizations, verb, rest),
  devices: (ctx, verb, rest) => runResource(ctx, devices, verb, rest),
  'security-groups': (ctx, verb, rest) => runResource(ctx, securityGroups, verb, rest),
};

async function runResource<T extends { id: string }>(ctx: CtlContext, spec: ResourceSpec<T>, verb: string | undefined, rest: string[]): Promise<void> {
  const v = ctx.args.values;
  const body = async () => ({ ...(await dataFlag(v.data)), ...spec.flags(v) });
  switch (verb) {
    case 'list':
      return ctx.out.list(await spec.list(ctx), spec.columns);
    case 'get':
      return ctx.out.object(await spec.get(ctx, requireArg(rest[0], `${spec.noun} id`)));
    case 'create': {
      const input = await body();
      if (Object.keys(input).length === 0) throw new UsageError(`nothing to create: give --data or field flags`);
      return ctx.out.object(await spec.create(ctx, input));
    }
    case 'update': {
      const id = requireArg(rest[0], `${spec.noun} id`);
      const input = await body();
      if (Object.keys(input).length === 0) throw new UsageError(`nothing to update: give --data or field flags`);
      return ctx.out.object(await spec.update(ctx, id, input, intFlag('if-match', v['if-match'])));
    }
    case 'delete': {
      const id = requireArg(rest[0], `${spec.noun} id`);
      await spec.remove(ctx, id, intFlag('if-match', v['if-match']));
      return ctx.out.done(`deleted ${spec.noun} ${id}`, { id, deleted: true });
    }
    default:
      throw new UsageError(verb === undefined ? 'missing verb' : `unknown verb ${JSON.stringify(verb)} for this resource`);
  }
}
