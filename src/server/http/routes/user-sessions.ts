import { FORMATS, ROUTES, SessionList, USER_SELF, UserIdParams, UserParams } from '../../../protocol/index.js';
import { notFound } from '../../errors.js';
import type { App } from '../app.js';
import type { RouteModule, ServerContext } from '../context.js';
import { empty, errors, json } from '../route-responses.js';
import type { FastifyRequest } from 'fastify';

/**
 * The user a `:user` path names: `me` is the caller's own (404 for a
 * credential without a user, such as the admin token). The access rule
 * already let only the user themselves or a server admin through.
 */
async function pathUser(ctx: ServerContext, req: FastifyRequest, user: string): Promise<string> {
  if (user !== USER_SELF) {
    if (!FORMATS.uuid(user)) throw notFound('user');
    return user;
  }
  const p = await ctx.access.principalOf(req);
  if (p.type !== 'user') throw notFound('user');
  return p.userId;
}

/** A user's sessions: listed and revoked by the user themselves or a server admin. */
export function userSessionRoutes(): RouteModule {
  return {
    register(app: App, ctx: ServerContext) {
      app.get(
        ROUTES.userSessions,
        {
          schema: {
            tags: ['sessions'],
            operationId: 'listUserSessions',
            summary: 'List a user\'s live sessions (`me`: the caller), never their tokens',
            params: UserParams,
            response: { 200: json('The live sessions, newest first.', SessionList), ...errors([401, 403, 404]) },
          },
        },
        async (req) => ({ items: await ctx.store.logins.listSessions(await pathUser(ctx, req, req.params.user)) }),
      );
      app.delete(
        ROUTES.userSession,
        {
          schema: {
            tags: ['sessions'],
            operationId: 'revokeUserSession',
            summary: 'Revoke a user\'s session (its watch streams end with forbidden)',
            params: UserIdParams,
            response: { 204: empty('Revoked.'), ...errors([401, 403, 404]) },
          },
        },
        async (req, reply) => {
          await ctx.store.logins.revokeSession(await pathUser(ctx, req, req.params.user), req.params.id);
          return reply.status(204).send(null);
        },
      );
    },
  };
}
