import { Type } from '@sinclair/typebox';
import {
  CreatedOrganization,
  Organization,
  OrganizationCreate,
  OrganizationList,
  OrganizationPatch,
  OrgParams,
  ROUTES,
} from '../../../protocol/index.js';
import type { App } from '../app.js';
import type { ServerContext } from '../context.js';
import { notFound } from '../../errors.js';
import { ifMatchOf, withEtag } from './shared.js';
import { IfMatchHeaders, RESPONSE_HEADERS, empty, errors, json } from '../route-responses.js';

const tags = ['organizations'];

export function registerOrganizationRoutes(app: App, ctx: ServerContext): void {
  app.get(
    ROUTES.organizations,
    {
      schema: {
        tags,
        operationId: 'listOrganizations',
        summary: 'List organizations the caller can see: a token its own, a user those it is a member of (no paging: see docs/protocol.md "Lists")',
        querystring: Type.Object({}, { additionalProperties: false }),
        response: { 200: json('The organizations.', OrganizationList), ...errors([400, 401, 403], { 403: 'A registration key may only enroll' }) },
      },
    },
    async (req) => {
      const p = await ctx.access.principalOf(req);
      if (p.type === 'user') {
        if (ctx.access.kindOfRequest(req) === 'admin') return { items: await ctx.store.organizations.list() };
        return { items: await ctx.store.members.organizationsOf(p.userId, p.credential === 'api_key' ? p.keyOrgIds : undefined) };
      }
      const items = await ctx.store.organizations.list(p.type === 'admin' ? undefined : p.orgId);
      return { items };
    },
  );

  app.post(
    ROUTES.organizations,
    {
      schema: {
        tags,
        operationId: 'createOrganization',
        summary: 'Create an organization (admin), with its first owner or an owner invitation',
        body: OrganizationCreate,
        response: {
          201: json('The organization created, and the owner invitation made with it (its token shown once).', CreatedOrganization, RESPONSE_HEADERS.etag),
          ...errors([400, 401, 403, 409, 413], {
            409: 'Another live organization has the name (already_exists), or a network route overlaps the tunnel pool or is a default route',
          }),
        },
      },
    },
    async (req, reply) => {
      const p = await ctx.access.principalOf(req);
      // A user creating an organization (a server admin's session) becomes its first owner.
      const org = await ctx.store.organizations.create(req.body, p.type === 'user' ? { userId: p.userId } : { admin: true });
      return reply.status(201).send(withEtag(reply, org));
    },
  );

  app.get(
    ROUTES.organization,
    {
      schema: {
        tags,
        operationId: 'getOrganization',
        summary: 'Get an organization',
        params: OrgParams,
        response: { 200: json('The organization.', Organization, RESPONSE_HEADERS.etag), ...errors([400, 401, 403, 404]) },
      },
    },
    async (req, reply) => {
      const org = await ctx.store.organizations.get(req.params.org);
      if (!org) throw notFound('organization');
      return withEtag(reply, org);
    },
  );

  app.patch(
    ROUTES.organization,
    {
      schema: {
        tags,
        operationId: 'updateOrganization',
        summary: 'Change an organization and its network settings',
        params: OrgParams,
        headers: IfMatchHeaders,
        body: OrganizationPatch,
        response: {
          200: json('The organization as changed (unchanged when the patch changes nothing).', Organization, RESPONSE_HEADERS.etag),
          ...errors([400, 401, 403, 404, 409, 412, 413], {
            403: 'Only the admin may change the name',
            409: 'Another live organization has the name (already_exists), ipv4_cidr cannot change while the organization has devices, or a network route overlaps the tunnel pool or is a default route',
          }),
        },
      },
    },
    async (req, reply) => {
      // The admin (token or server admin's session) sees every organization's name anyway; a tenant may not probe them.
      const writer = { rename: ctx.access.kindOfRequest(req) === 'admin' };
      return withEtag(reply, await ctx.store.organizations.patch(req.params.org, req.body, ifMatchOf(req), writer));
    },
  );

  app.delete(
    ROUTES.organization,
    {
      schema: {
        tags,
        operationId: 'deleteOrganization',
        summary: 'Delete an empty organization (admin)',
        params: OrgParams,
        headers: IfMatchHeaders,
        response: {
          204: empty('Deleted; its watchers receive the organization delete event.'),
          ...errors([400, 401, 403, 404, 409, 412], { 409: 'The organization still has devices or security groups' }),
        },
      },
    },
    async (req, reply) => {
      await ctx.store.organizations.delete(req.params.org, ifMatchOf(req));
      return reply.status(204).send(null);
    },
  );
}
