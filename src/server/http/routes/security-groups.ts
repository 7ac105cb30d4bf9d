import { Type } from '@sinclair/typebox';
import {
  ChangeListOf,
  ErrorResponse,
  ListQuery,
  OrgIdParams,
  OrgParams,
  ROUTES,
  SecurityGroup,
  SecurityGroupCreate,
  SecurityGroupPatch,
} from '../../../protocol/index.js';
import type { App } from '../app.js';
import type { ServerContext } from '../context.js';
import { notFound } from '../../errors.js';
import { requireOrgAccess } from '../auth.js';
import { answeredNotModified, authenticated, ifMatchOf, principalOf, sendList, withEtag } from './shared.js';

const tags = ['security groups'];
const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse };

export function registerSecurityGroupRoutes(app: App, ctx: ServerContext): void {
  const auth = authenticated(ctx);
  app.get(
    ROUTES.securityGroups,
    {
      ...auth,
      schema: {
        tags,
        summary: 'List security groups (ETag / If-None-Match, gt_revision, paging by revision)',
        params: OrgParams,
        querystring: ListQuery,
        response: { 200: ChangeListOf(SecurityGroup), 304: Type.Null(), 410: ErrorResponse, ...errors },
      },
    },
    async (req, reply) => {
      requireOrgAccess(await principalOf(req, ctx), req.params.org, 'read');
      if (await answeredNotModified(req, reply, ctx, req.params.org, req.query)) return reply;
      const page = await ctx.store.list(req.params.org, 'security-group', req.query);
      return sendList(reply, page, (row) => row.value);
    },
  );

  app.post(
    ROUTES.securityGroups,
    { ...auth, schema: { tags, summary: 'Create a security group', params: OrgParams, body: SecurityGroupCreate, response: { 201: SecurityGroup, ...errors } } },
    async (req, reply) => {
      requireOrgAccess(await principalOf(req, ctx), req.params.org, 'write');
      const group = await ctx.store.createSecurityGroup(req.params.org, req.body);
      return reply.status(201).send(withEtag(reply, group));
    },
  );

  app.get(
    ROUTES.securityGroup,
    { ...auth, schema: { tags, summary: 'Get a security group', params: OrgIdParams, response: { 200: SecurityGroup, ...errors } } },
    async (req, reply) => {
      requireOrgAccess(await principalOf(req, ctx), req.params.org, 'read');
      const group = await ctx.store.getSecurityGroup(req.params.org, req.params.id);
      if (!group) throw notFound('security group');
      return withEtag(reply, group);
    },
  );

  app.patch(
    ROUTES.securityGroup,
    { ...auth, schema: { tags, summary: 'Change a security group (agents apply it live)', params: OrgIdParams, body: SecurityGroupPatch, response: { 200: SecurityGroup, 412: ErrorResponse, ...errors } } },
    async (req, reply) => {
      requireOrgAccess(await principalOf(req, ctx), req.params.org, 'write');
      return withEtag(reply, await ctx.store.patchSecurityGroup(req.params.org, req.params.id, req.body, ifMatchOf(req)));
    },
  );

  app.delete(
    ROUTES.securityGroup,
    { ...auth, schema: { tags, summary: 'Delete a security group no device uses', params: OrgIdParams, response: { 204: Type.Null(), 412: ErrorResponse, ...errors } } },
    async (req, reply) => {
      requireOrgAccess(await principalOf(req, ctx), req.params.org, 'write');
      await ctx.store.deleteSecurityGroup(req.params.org, req.params.id, ifMatchOf(req));
      return reply.status(204).send(null);
    },
  );
}
