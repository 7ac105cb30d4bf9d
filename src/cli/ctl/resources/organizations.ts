import type { CreatedOrganization, Organization, OrganizationCreate, OrganizationPatch } from '../../../client/index.js';
import type { CommandGroup } from '../command-spec.js';
import { defined } from '../flag-values.js';
import { resolveOrganization } from '../names.js';
import { crudCommands, type CrudSpec } from './crud.js';
import { shownOnce } from './shown-once.js';

const organizations: CrudSpec<Organization> = {
  noun: 'organization',
  ref: '<org>',
  refHelp: 'its name or id',
  scoped: false,
  columns: [
    { header: 'ID', value: (o) => o.id },
    { header: 'NAME', value: (o) => o.name },
    { header: 'CIDR', value: (o) => o.network.ipv4_cidr },
    { header: 'MTU', value: (o) => o.network.mtu },
    // The object's own revision, not the organization's head (that is ctl status's): shown only wide, under a name that says so.
    { header: 'OBJ-REV', value: (o) => o.revision, wide: true },
    { header: 'RESOLVERS', value: (o) => o.network.resolvers.join(','), wide: true },
    { header: 'ROUTES', value: (o) => o.network.routes.map((r) => (r.via ? `${r.destination} via ${r.via}` : r.destination)).join(','), wide: true },
    { header: 'CREATED', value: (o) => o.created_at, wide: true },
    { header: 'DESCRIPTION', value: (o) => o.description },
  ],
  fieldOrder: ['description', 'network', 'tag_owners', 'audit_readable_by_read', 'policy'],
  listDetails: [
    'Columns: ID NAME CIDR (the tunnel address pool) MTU DESCRIPTION; -o wide adds OBJ-REV, the revision of',
    "the organization object itself (its last settings change: what --if-match takes), RESOLVERS, ROUTES and",
    "CREATED. The organization's head revision, which every change of its devices and groups advances, is",
    'what fleetplane ctl status prints.',
  ].join('\n'),
  fieldFlags: [
    { name: 'name', help: 'organization name (unique; what --org takes)' },
    { name: 'description', help: 'description' },
  ],
  createFlags: ['owner-email', 'owner-user-id'],
  fields: async (ctx, verb) =>
    defined({
      name: ctx.flags.string('name'),
      description: ctx.flags.string('description'),
      ...(verb === 'create' ? { owner_email: ctx.flags.string('owner-email'), owner_user_id: ctx.flags.string('owner-user-id') } : {}),
    }),
  afterCreate: (ctx, created) => {
    const invitation = 'owner_invitation' in created ? (created as CreatedOrganization).owner_invitation : undefined;
    if (invitation?.token !== undefined) {
      shownOnce(ctx, 'owner invitation token (give it to the owner: fleetplane ctl invitations accept TOKEN, signed in)');
    }
  },
  list: async (ctx) => (await ctx.client.organizations.list({ signal: ctx.signal })).items,
  resolve: async (ctx, ref) => (await resolveOrganization(ctx.client, ref, ctx.signal)).id,
  get: (ctx, id) => ctx.client.organizations.get(id, { signal: ctx.signal }),
  create: (ctx, body) => ctx.client.organizations.create(body as OrganizationCreate, { signal: ctx.signal }),
  update: (ctx, id, body, ifMatch) => ctx.client.organizations.update(id, body as OrganizationPatch, { signal: ctx.signal, ifMatch }),
  remove: (ctx, id, ifMatch) => ctx.client.organizations.delete(id, { signal: ctx.signal, ifMatch }),
  summaries: {
    list: 'list the organizations the token can see',
    get: 'show one organization',
    create: 'create an organization, with its owner or an owner invitation (admin token: its token is printed once)',
    update: 'change an organization (name, description, network via --data)',
    delete: 'delete an organization without devices or security groups (admin token only)',
  },
  examples: {
    list: ['fleetplane ctl orgs list', 'fleetplane ctl orgs list -o yaml'],
    get: ['fleetplane ctl orgs get acme'],
    create: [
      'fleetplane ctl orgs create --name acme --description "ACME production"',
      'fleetplane ctl orgs create --name acme --owner-email dana@example.com',
      `fleetplane ctl orgs create --name lab --data '{"network":{"ipv4_cidr":"10.99.0.0/16"}}'`,
    ],
    update: [`fleetplane ctl orgs update acme --data '{"network":{"mtu":1380}}'`, 'fleetplane ctl orgs update acme --name acme-prod --if-match 12'],
    delete: ['fleetplane ctl orgs delete lab'],
  },
};

export const organizationsGroup: CommandGroup = {
  name: 'orgs',
  aliases: ['org', 'organization', 'organizations'],
  summary: 'organizations: each has its own devices, security groups, network and revision',
  commands: crudCommands(organizations),
};
