import {
  ListQuery,
  OrgIdParams,
  OrgParams,
  ROUTES,
  SecurityGroup,
  SecurityGroupCreate,
  SecurityGroupList,
  SecurityGroupPatch,
} from '../../../protocol/index.js';
import type { App } from '../app.js';
import type { ServerContext } from '../context.js';
import { notFound } from '../../errors.js';
import { answeredNotModified, ifMatchOf, sendList, withEtag } from './shared.js';
import { IfMatchHeaders, IfNoneMatchHeaders, RESPONSE_HEADERS, empty, errors, json } from '../route-responses.js';

const tags = ['security groups'];

export function registerSecurityGroupRoutes(app: App, ctx: ServerContext): void {
  app.get(
    ROUTES.securityGroups,
    {
      schema: {
        tags,
        operationId: 'listSecurityGroups',
        summary: 'List security groups (ETag / If-None-Match, gt_revision, paging by revision)',
        headers: IfNoneMatchHeaders,
        params: OrgParams,
        querystring: ListQuery,
        response: {
          200: json('Security groups (and tombstones with gt_revision or a cursor); `next` while pages remain.', SecurityGroupList, RESPONSE_HEADERS.etag, RESPONSE_HEADERS.revision),
          304: empty('Nothing changed since the If-None-Match revision.', RESPONSE_HEADERS.etag),
          ...errors([400, 401, 403, 404, 410], { 410: 'gt_revision is older than the organization keeps: list again from 0' }),
        },
      },
    },
    async (req, reply) => {
      if (await answeredNotModified(req, reply, ctx, req.params.org, req.query)) return reply;
      const page = await ctx.store.changes.list(req.params.org, 'security-group', req.query);
      return sendList(reply, page, (row) => row.value);
    },
  );

  app.post(
    ROUTES.securityGroups,
    {
      schema: {
        tags,
        operationId: 'createSecurityGroup',
        summary: 'Create a security group',
        params: OrgParams,
        body: SecurityGroupCreate,
        response: { 201: json('The security group created.', SecurityGroup, RESPONSE_HEADERS.etag), ...errors([400, 401, 403, 404, 413]) },
      },
    },
    async (req, reply) => {
      const group = await ctx.store.securityGroups.create(req.params.org, req.body);
      return reply.status(201).send(withEtag(reply, group));
    },
  );

  app.get(
    ROUTES.securityGroup,
    {
      schema: {
        tags,
        operationId: 'getSecurityGroup',
        summary: 'Get a security group',
        params: OrgIdParams,
        response: { 200: json('The security group.', SecurityGroup, RESPONSE_HEADERS.etag), ...errors([400, 401, 403, 404]) },
      },
    },
    async (req, reply) => {
      const group = await ctx.store.securityGroups.get(req.params.org, req.params.id);
      if (!group) throw notFound('security group');
      return withEtag(reply, group);
    },
  );

  app.patch(
    ROUTES.securityGroup,
    {
      schema: {
        tags,
        operationId: 'updateSecurityGroup',
        summary: 'Change a security group (agents apply it live)',
        params: OrgIdParams,
        headers: IfMatchHeaders,
        body: SecurityGroupPatch,
        response: {
          200: json('The security group as changed (unchanged when the patch changes nothing).', SecurityGroup, RESPONSE_HEADERS.etag),
          ...errors([400, 401, 403, 404, 412, 413]),
        },
      },
    },
    async (req, reply) => {
      return withEtag(reply, await ctx.store.securityGroups.patch(req.params.org, req.params.id, req.body, ifMatchOf(req)));
    },
  );

  app.delete(
    ROUTES.securityGroup,
    {
      schema: {
        tags,
        operationId: 'deleteSecurityGroup',
        summary: 'Delete a security group no device uses',
        params: OrgIdParams,
        headers: IfMatchHeaders,
        response: { 204: empty('Deleted.'), ...errors([400, 401, 403, 404, 409, 412], { 409: 'A device uses the group' }) },
      },
    },
    async (req, reply) => {
      await ctx.store.securityGroups.delete(req.params.org, req.params.id, ifMatchOf(req));
      return reply.status(204).send(null);
    },
  );
}
