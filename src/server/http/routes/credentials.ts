import {
  CreatedOrgToken,
  CreatedRegistrationKey,
  OrgIdParams,
  OrgParams,
  OrgTokenCreate,
  OrgTokenList,
  RegistrationKey,
  RegistrationKeyCreate,
  RegistrationKeyList,
  ROUTES,
} from '../../../protocol/index.js';
import type { App } from '../app.js';
import type { ServerContext } from '../context.js';
import { ApiError, notFound } from '../../errors.js';
import { empty, errors as errorResponses, json } from '../route-responses.js';

const errors = errorResponses([400, 401, 403, 404]);
const withBody = errorResponses([400, 401, 403, 404, 413]);

/** Tokens and registration keys: organization admins only, secrets shown once. */
export function registerCredentialRoutes(app: App, ctx: ServerContext): void {

  app.post(
    ROUTES.tokens,
    {
      schema: {
        tags: ['tokens'],
        operationId: 'createOrgToken',
        summary: 'Create an organization token (shown once)',
        params: OrgParams,
        body: OrgTokenCreate,
        response: { 201: json('The token and, once, its secret.', CreatedOrgToken), ...withBody },
      },
    },
    async (req, reply) => {
      return reply.status(201).send(await ctx.store.credentials.createOrgToken(req.params.org, req.body));
    },
  );
  app.get(
    ROUTES.tokens,
    {
      schema: {
        tags: ['tokens'],
        operationId: 'listOrgTokens',
        summary: 'List organization tokens (without secrets)',
        params: OrgParams,
        response: { 200: json('The tokens, without secrets.', OrgTokenList), ...errors },
      },
    },
    async (req) => {
      return { items: await ctx.store.credentials.listOrgTokens(req.params.org) };
    },
  );
  app.delete(
    ROUTES.token,
    {
      schema: {
        tags: ['tokens'],
        operationId: 'revokeOrgToken',
        summary: 'Revoke a token (its watch streams end with forbidden)',
        params: OrgIdParams,
        response: { 204: empty('Revoked.'), ...errors },
      },
    },
    async (req, reply) => {
      await ctx.store.credentials.revokeOrgToken(req.params.org, req.params.id);
      return reply.status(204).send(null);
    },
  );

  app.post(
    ROUTES.registrationKeys,
    {
      schema: {
        tags: ['registration keys'],
        operationId: 'createRegistrationKey',
        summary: 'Create a registration key (shown once)',
        params: OrgParams,
        body: RegistrationKeyCreate,
        response: { 201: json('The key and, once, its secret.', CreatedRegistrationKey), ...withBody },
      },
    },
    async (req, reply) => {
      return reply.status(201).send(await ctx.store.credentials.createRegistrationKey(req.params.org, req.body));
    },
  );
  app.get(
    ROUTES.registrationKeys,
    {
      schema: {
        tags: ['registration keys'],
        operationId: 'listRegistrationKeys',
        summary: 'List registration keys (without secrets)',
        params: OrgParams,
        response: { 200: json('The keys, without secrets.', RegistrationKeyList), ...errors },
      },
    },
    async (req) => {
      return { items: await ctx.store.credentials.listRegistrationKeys(req.params.org) };
    },
  );
  app.get(
    ROUTES.registrationKey,
    {
      schema: {
        tags: ['registration keys'],
        operationId: 'getRegistrationKey',
        summary: 'Get a registration key (without its secret)',
        params: OrgIdParams,
        response: { 200: json('The key, without its secret.', RegistrationKey), ...errors },
      },
    },
    async (req) => {
      const key = await ctx.store.credentials.getRegistrationKey(req.params.org, req.params.id);
      if (!key) throw notFound('registration key');
      return key;
    },
  );
  app.delete(
    ROUTES.registrationKey,
    {
      schema: {
        tags: ['registration keys'],
        operationId: 'deleteRegistrationKey',
        summary: 'Delete a registration key',
        params: OrgIdParams,
        response: { 204: empty('Deleted.'), ...errors },
      },
    },
    async (req, reply) => {
      await ctx.store.credentials.deleteRegistrationKey(req.params.org, req.params.id);
      return reply.status(204).send(null);
    },
  );
  app.get(
    ROUTES.ownRegistrationKey,
    {
      schema: {
        tags: ['registration keys'],
        operationId: 'getOwnRegistrationKey',
        summary: 'The registration key given as the bearer token (its organization_id tells an agent where to enroll)',
        response: { 200: json('The key, without its secret.', RegistrationKey), ...errors },
      },
    },
    async (req) => {
      const p = await ctx.access.principalOf(req);
      if (p.type !== 'registration') throw new ApiError('forbidden', 'only a registration key may look itself up');
      const key = await ctx.store.credentials.getRegistrationKey(p.orgId, p.keyId);
      // The same answer enrollment would give: a key that can't enroll is no credential.
      if (!key || (key.single_use && key.used) || (key.expires_at !== null && Date.parse(key.expires_at) <= Date.now())) {
        throw new ApiError('unauthorized', 'the registration key is used up or expired');
      }
      return key;
    },
  );
}
