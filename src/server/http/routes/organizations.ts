import { Type } from '@sinclair/typebox';
import {
  ErrorResponse,
  Organization,
  OrganizationCreate,
  OrganizationPatch,
  OrgParams,
  ROUTES,
  Convergence,
} from '../../../protocol/index.js';
import type { App } from '../app.js';
import type { ServerContext } from '../context.js';
import { ApiError, notFound } from '../../errors.js';
import { requireAdmin, requireOrgAccess } from '../auth.js';
import { authenticated, ifMatchOf, principalOf, withEtag } from './shared.js';

const tags = ['organizations'];
const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse };

export function registerOrganizationRoutes(app: App, ctx: ServerContext): void {
  const auth = authenticated(ctx);
  app.get(
    ROUTES.organizations,
    { ...auth, schema: { tags, summary: 'List organizations the token can see (no paging: see docs/protocol.md "Lists")', querystring: Type.Object({}, { additionalProperties: false }), response: { 200: Type.Object({ items: Type.Array(Organization) }), 401: ErrorResponse } } },
    async (req) => {
      const p = await principalOf(req, ctx);
      if (p.type === 'registration') throw new ApiError('forbidden', 'a registration key may only enroll a device');
      const items = await ctx.store.listOrganizations(p.type === 'admin' ? undefined : p.orgId);
      return { items };
    },
  );

  app.post(
    ROUTES.organizations,
    { ...auth, schema: { tags, summary: 'Create an organization (admin)', body: OrganizationCreate, response: { 201: Organization, ...errors } } },
    async (req, reply) => {
      requireAdmin(await principalOf(req, ctx));
      const org = await ctx.store.createOrganization(req.body);
      return reply.status(201).send(withEtag(reply, org));
    },
  );

  app.get(
    ROUTES.organization,
    { ...auth, schema: { tags, summary: 'Get an organization', params: OrgParams, response: { 200: Organization, ...errors } } },
    async (req, reply) => {
      requireOrgAccess(await principalOf(req, ctx), req.params.org, 'read');
      const org = await ctx.store.getOrganization(req.params.org);
      if (!org) throw notFound('organization');
      return withEtag(reply, org);
    },
  );

  app.patch(
    ROUTES.organization,
    { ...auth, schema: { tags, summary: 'Change an organization and its network settings', params: OrgParams, body: OrganizationPatch, response: { 200: Organization, 412: ErrorResponse, ...errors } } },
    async (req, reply) => {
      requireOrgAccess(await principalOf(req, ctx), req.params.org, 'write');
      return withEtag(reply, await ctx.store.patchOrganization(req.params.org, req.body, ifMatchOf(req)));
    },
  );

  app.delete(
    ROUTES.organization,
    { ...auth, schema: { tags, summary: 'Delete an empty organization (admin)', params: OrgParams, response: { 204: Type.Null(), 412: ErrorResponse, ...errors } } },
    async (req, reply) => {
      const p = await principalOf(req, ctx);
      requireOrgAccess(p, req.params.org, 'read');
      requireAdmin(p);
      await ctx.store.deleteOrganization(req.params.org, ifMatchOf(req));
      return reply.status(204).send(null);
    },
  );
}
