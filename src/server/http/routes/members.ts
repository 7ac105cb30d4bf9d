import {
  CreatedInvitation,
  InvitationAccept,
  InvitationCreate,
  InvitationList,
  Member,
  MemberList,
  MemberPatch,
  OrgIdParams,
  OrgParams,
  OrgUserParams,
  ROUTES,
} from '../../../protocol/index.js';
import type { FastifyRequest } from 'fastify';
import type { App } from '../app.js';
import type { ServerContext } from '../context.js';
import { ApiError } from '../../errors.js';
import { empty, errors as errorResponses, json } from '../route-responses.js';

const tags = ['members'];
const errors = errorResponses([400, 401, 403, 404]);
const changeErrors = errorResponses([400, 401, 403, 404, 409, 413], {
  403: 'An admin may not change, remove or invite an owner',
  409: 'The organization would have no owner left',
});

/**
 * Members and invitations (docs/protocol.md "Members and roles"). The rule
 * table lets owners, admins (members and organization tokens) and the admin
 * token in; here, only owners and the admin token touch owners.
 */
export function registerMemberRoutes(app: App, ctx: ServerContext): void {
  /** Whether the authorized caller may touch owners: owners, server admins and the admin token. */
  const ownersScope = (req: FastifyRequest): { owners: boolean } => {
    const kind = ctx.access.kindOfRequest(req);
    return { owners: kind === 'admin' || kind === 'org-owner' };
  };

  app.get(
    ROUTES.members,
    {
      schema: {
        tags,
        operationId: 'listMembers',
        summary: 'List the members of an organization and their roles (no paging)',
        params: OrgParams,
        response: { 200: json('The members.', MemberList), ...errors },
      },
    },
    async (req) => ({ items: await ctx.store.members.list(req.params.org) }),
  );

  app.patch(
    ROUTES.member,
    {
      schema: {
        tags,
        operationId: 'setMemberRole',
        summary: "Change a member's role",
        params: OrgUserParams,
        body: MemberPatch,
        response: { 200: json('The member as changed.', Member), ...changeErrors },
      },
    },
    async (req) => ctx.store.members.setRole(req.params.org, req.params.user, req.body.role, ownersScope(req)),
  );

  app.delete(
    ROUTES.member,
    {
      schema: {
        tags,
        operationId: 'removeMember',
        summary: 'Remove a member (its sessions and API keys lose access to the organization with their next request)',
        params: OrgUserParams,
        response: { 204: empty('Removed.'), ...changeErrors },
      },
    },
    async (req, reply) => {
      await ctx.store.members.remove(req.params.org, req.params.user, ownersScope(req));
      return reply.status(204).send(null);
    },
  );

  app.post(
    ROUTES.invitations,
    {
      schema: {
        tags,
        operationId: 'createInvitation',
        summary: 'Invite a user by email or subject (accepted at its next login), or whoever presents the returned token',
        params: OrgParams,
        body: InvitationCreate,
        response: {
          201: json('The invitation; one with neither email nor subject carries its token, shown once.', CreatedInvitation),
          ...errorResponses([400, 401, 403, 404, 409, 413], {
            403: 'Only an owner (or the admin token) may invite an owner',
            409: 'The organization has as many open invitations as it may (MAX_OPEN_INVITATIONS)',
          }),
        },
      },
    },
    async (req, reply) => {
      if (req.body.role === 'owner' && !ownersScope(req).owners) throw new ApiError('forbidden', 'only an owner may invite an owner');
      const created = await ctx.store.members.createInvitation(req.params.org, req.body, await inviterOf(ctx, req));
      return reply.status(201).send(created);
    },
  );

  app.post(
    ROUTES.acceptInvitation,
    {
      schema: {
        tags,
        operationId: 'acceptInvitation',
        summary: "Accept an invitation by its token: the caller (a user's session) becomes a member with its role",
        body: InvitationAccept,
        response: {
          200: json('The membership.', Member),
          ...errorResponses([400, 401, 403, 404, 413], { 403: "Only a user's session accepts an invitation", 404: 'No open invitation has this token (unknown, used, revoked or expired)' }),
        },
      },
    },
    async (req) => {
      const p = await ctx.access.principalOf(req);
      if (p.type !== 'user' || p.credential !== 'session') throw new ApiError('forbidden', "only a user's session accepts an invitation");
      return ctx.store.members.acceptInvitation(req.body.token, p.userId);
    },
  );

  app.get(
    ROUTES.invitations,
    {
      schema: {
        tags,
        operationId: 'listInvitations',
        summary: 'List open invitations (not accepted, revoked or expired)',
        params: OrgParams,
        response: { 200: json('The open invitations.', InvitationList), ...errors },
      },
    },
    async (req) => ({ items: await ctx.store.members.listInvitations(req.params.org) }),
  );

  app.delete(
    ROUTES.invitation,
    {
      schema: {
        tags,
        operationId: 'revokeInvitation',
        summary: 'Revoke an open invitation',
        params: OrgIdParams,
        response: { 204: empty('Revoked.'), ...errorResponses([400, 401, 403, 404], { 403: 'Only an owner may revoke an owner invitation' }) },
      },
    },
    async (req, reply) => {
      await ctx.store.members.revokeInvitation(req.params.org, req.params.id, ownersScope(req));
      return reply.status(204).send(null);
    },
  );
}

/** `created_by` of an invitation: `user:<id>`, `token:<id>` or `admin`. */
async function inviterOf(ctx: ServerContext, req: FastifyRequest): Promise<string> {
  const p = await ctx.access.principalOf(req);
  if (p.type === 'user') return `user:${p.userId}`;
  if (p.type === 'org') return `token:${p.tokenId}`;
  return p.type;
}
