import { AuditList, AuditQuery, OrgParams, ROUTES, ServerAuditQuery } from '../../../protocol/index.js';
import { ApiError, notFound } from '../../errors.js';
import type { App } from '../app.js';
import type { ServerContext } from '../context.js';
import { errors, json } from '../route-responses.js';

const tags = ['audit'];

/** The audit log: an organization's (admins; read tokens and members where granted) and the server's (admin token). */
export function registerAuditRoutes(app: App, ctx: ServerContext): void {
  app.get(
    ROUTES.orgAudit,
    {
      schema: {
        tags,
        operationId: 'listOrgAudit',
        summary: "Page through an organization's audit log (newest first, or by revision with gt_revision)",
        params: OrgParams,
        querystring: AuditQuery,
        response: { 200: json('One page of entries.', AuditList), ...errors([400, 401, 403, 404]) },
      },
    },
    async (req) => {
      const { org } = req.params;
      const organization = await ctx.store.organizations.get(org);
      if (organization === undefined) throw notFound('organization');
      // The rule lets read principals in; the organization decides whether they may read its log.
      if (ctx.access.kindOfRequest(req) === 'org-read' && organization.audit_readable_by_read !== true) {
        throw new ApiError('forbidden', 'this organization lets only admins read its audit log (audit_readable_by_read is false)');
      }
      return ctx.store.audit.list({ org }, req.query);
    },
  );
  app.get(
    ROUTES.audit,
    {
      schema: {
        tags,
        operationId: 'listServerAudit',
        summary: "Page through every organization's audit log and the entries outside any (admin token)",
        querystring: ServerAuditQuery,
        response: { 200: json('One page of entries.', AuditList), ...errors([400, 401, 403]) },
      },
    },
    async (req) => {
      const { organization, ...query } = req.query;
      return ctx.store.audit.list({ server: true, organization }, query);
    },
  );
}
