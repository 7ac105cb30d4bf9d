import { ApiKeyCreate, ApiKeyList, CreatedApiKey, FORMATS, ROUTES, USER_SELF, UserIdParams, UserParams } from '../../../protocol/index.js';
import type { FastifyRequest } from 'fastify';
import type { App } from '../app.js';
import type { ServerContext } from '../context.js';
import { notFound } from '../../errors.js';
import { empty, errors as errorResponses, json } from '../route-responses.js';

const tags = ['api keys'];
const errors = errorResponses([400, 401, 403, 404]);

/**
 * Personal API keys (docs/protocol.md "Personal API keys"). The rule table
 * admits the user itself on its own keys (`me` or its id) and, to list and
 * revoke, a server admin or the admin token on anyone's. Only a user's session
 * creates keys: a leaked key must not mint more.
 */
export function registerApiKeyRoutes(app: App, ctx: ServerContext): void {
  app.post(
    ROUTES.userApiKeys,
    {
      schema: {
        tags,
        operationId: 'createApiKey',
        summary: 'Create a personal API key (shown once; a session only)',
        params: UserParams,
        body: ApiKeyCreate,
        response: {
          201: json('The key and, once, its secret.', CreatedApiKey),
          ...errorResponses([400, 401, 403, 404, 409, 413], {
            404: 'The user is not a member of one of the organizations',
            409: 'The user holds as many API keys as it may (MAX_API_KEYS_PER_USER)',
          }),
        },
      },
    },
    async (req, reply) => reply.status(201).send(await ctx.store.credentials.createApiKey(await userOf(ctx, req, req.params.user), req.body)),
  );

  app.get(
    ROUTES.userApiKeys,
    {
      schema: {
        tags,
        operationId: 'listApiKeys',
        summary: "List a user's active API keys (without secrets)",
        params: UserParams,
        response: { 200: json('The keys, without secrets.', ApiKeyList), ...errors },
      },
    },
    async (req) => ({ items: await ctx.store.credentials.listApiKeys(await userOf(ctx, req, req.params.user)) }),
  );

  app.delete(
    ROUTES.userApiKey,
    {
      schema: {
        tags,
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key (its watch streams end with forbidden)',
        params: UserIdParams,
        response: { 204: empty('Revoked.'), ...errors },
      },
    },
    async (req, reply) => {
      await ctx.store.credentials.revokeApiKey(await userOf(ctx, req, req.params.user), req.params.id);
      return reply.status(204).send(null);
    },
  );
}

/** The user `:user` names: the caller for `me` (404 for the admin token, which is no user), else the id. */
async function userOf(ctx: ServerContext, req: FastifyRequest, user: string): Promise<string> {
  const p = await ctx.access.principalOf(req);
  if (user === USER_SELF) {
    if (p.type !== 'user') throw notFound('user');
    return p.userId;
  }
  if (!FORMATS.uuid(user)) throw notFound('user');
  return user;
}
