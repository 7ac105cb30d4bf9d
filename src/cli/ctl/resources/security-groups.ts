import type { SecurityGroup, SecurityGroupCreate, SecurityGroupPatch } from '../../../client/index.js';
import type { CommandGroup } from '../command-spec.js';
import { orgLabel, type CtlContext, type OrgRef } from '../context.js';
import { defined } from '../flag-values.js';
import { watchList } from '../list-watch.js';
import { resolveId } from '../names.js';
import { formatRule, RULE_GRAMMAR, rulesFromFlags } from '../rule-flags.js';
import { crudCommands, type CrudSpec } from './crud.js';

const org = async (ctx: CtlContext) => (await ctx.org()).id;

/**
 * The groups agents enforce: while a policy document manages the
 * organization, its groups (shown, not editable: writes get 409 naming the
 * document; the group objects are tombstoned), else the group objects.
 */
async function enforcedGroups(ctx: CtlContext, o: OrgRef): Promise<SecurityGroup[]> {
  const organization = await ctx.client.organizations.get(o.id, { signal: ctx.signal });
  if (!organization.policy) return (await ctx.client.securityGroups.list(o.id, { signal: ctx.signal })).items;
  ctx.stderr.write(`# the policy document of ${orgLabel(o)} manages these groups: change them with fleetplane ctl policy get|apply\n`);
  const at = { organization_id: o.id, revision: organization.revision, created_at: organization.updated_at, updated_at: organization.updated_at };
  return organization.policy.groups.map((g) => ({ ...g, ...at }));
}

/** The id of the security group `ref` names: an id, its name, or its description when no other group has it. */
export async function resolveSecurityGroup(ctx: CtlContext, ref: string): Promise<string> {
  const o = await ctx.org();
  const list = () => enforcedGroups(ctx, o);
  // Groups stored before names existed have none.
  return resolveId(ref, list, (g) => [...(g.name ? [g.name] : []), g.description], 'security group', ` in organization ${orgLabel(o)}`);
}

/** `--name`: "" clears it. */
function nameField(ctx: CtlContext): string | null | undefined {
  const text = ctx.flags.string('name');
  return text === undefined ? undefined : text === '' ? null : text;
}

const securityGroups: CrudSpec<SecurityGroup> = {
  noun: 'security group',
  ref: '<group>',
  refHelp: 'its name, its description (when no other group has it) or id',
  scoped: true,
  columns: [
    { header: 'ID', value: (g) => g.id },
    { header: 'NAME', value: (g) => g.name ?? '' },
    { header: 'INBOUND', value: (g) => g.inbound_rules.length },
    { header: 'OUTBOUND', value: (g) => g.outbound_rules.length },
    { header: 'REVISION', value: (g) => g.revision },
    { header: 'INBOUND RULES', value: (g) => g.inbound_rules.map((r) => formatRule(r, 'from')).join('; '), wide: true },
    { header: 'OUTBOUND RULES', value: (g) => g.outbound_rules.map((r) => formatRule(r, 'to')).join('; '), wide: true },
    { header: 'DESCRIPTION', value: (g) => g.description },
  ],
  fieldOrder: ['description', 'applies_to', 'inbound_rules', 'outbound_rules', 'organization_id'],
  fieldFlags: [{ name: 'name', help: 'name, unique in the organization: what group:NAME in rules references ("" for none)' }, { name: 'description', help: 'description (other commands take it when the group has no name)' }, 'allow', 'from', 'egress-allow', 'to'],
  fields: async (ctx) => {
    const rules = rulesFromFlags(ctx.flags);
    return defined({ name: nameField(ctx), description: ctx.flags.string('description'), inbound_rules: rules.inbound, outbound_rules: rules.outbound });
  },
  list: async (ctx) => enforcedGroups(ctx, await ctx.org()),
  resolve: resolveSecurityGroup,
  // resolveSecurityGroup found it among the enforced groups: the document's have no object to GET.
  get: async (ctx, id) => {
    const found = (await enforcedGroups(ctx, await ctx.org())).find((g) => g.id === id);
    return found ?? ctx.client.securityGroups.get(await org(ctx), id, { signal: ctx.signal });
  },
  create: async (ctx, body) => ctx.client.securityGroups.create(await org(ctx), body as SecurityGroupCreate, { signal: ctx.signal }),
  update: async (ctx, id, body, ifMatch) =>
    ctx.client.securityGroups.update(await org(ctx), id, body as SecurityGroupPatch, { signal: ctx.signal, ifMatch }),
  remove: async (ctx, id, ifMatch) => ctx.client.securityGroups.delete(await org(ctx), id, { signal: ctx.signal, ifMatch }),
  watch: async (ctx) => watchList(ctx, await ctx.org(), 'security-group', securityGroups.columns, (g) => g),
  summaries: {
    list: 'list the security groups of an organization',
    get: 'show one security group',
    create: 'create a security group',
    update: 'change a security group (name, description, rules)',
    delete: 'delete a security group no device uses',
  },
  examples: {
    list: ['fleetplane ctl sg list --org acme -o wide'],
    get: ['fleetplane ctl sg get web --org acme -o yaml'],
    create: [
      'fleetplane ctl security-groups create --org acme --name web --allow tcp:22 --from tag:ops --allow tcp:443 --allow icmp --egress-allow any',
      'fleetplane ctl sg create --org acme --name db --allow tcp:5432 --from group:web,10.0.0.0/8',
      'fleetplane ctl sg create --org acme --description wg --allow udp:51820-51830 --from 192.0.2.10,198.51.100.0/24',
      'fleetplane ctl sg create --org acme --data @group.json',
    ],
    update: ['fleetplane ctl sg update web --org acme --allow tcp:22 --from 10.1.0.0/16,tag:ops'],
    delete: ['fleetplane ctl sg delete web --org acme'],
  },
  writeDetails: RULE_GRAMMAR,
};

export const securityGroupsGroup: CommandGroup = {
  name: 'security-groups',
  aliases: ['security-group', 'sg', 'sgs'],
  summary: "security groups: a device's inbound and outbound firewall rules",
  commands: crudCommands(securityGroups),
};
