import { tagCallerFor } from '../tag-caller.js';
import {
  CreatedOrgToken,
  CreatedRegistrationKey,
  OrgIdParams,
  OrgParams,
  OrgToken,
  OrgTokenCreate,
  OrgTokenList,
  OwnRegistrationKey,
  RegistrationKey,
  RegistrationKeyCreate,
  RegistrationKeyList,
  ROUTES,
} from '../../../protocol/index.js';
import type { FastifyRequest } from 'fastify';
import type { App } from '../app.js';
import type { ServerContext } from '../context.js';
import { ApiError, notFound } from '../../errors.js';
import type { Maker, ReparentTo } from '../../store/index.js';
import { empty, errors as errorResponses, json } from '../route-responses.js';

const errors = errorResponses([400, 401, 403, 404]);
const withBody = errorResponses([400, 401, 403, 404, 413]);
const reparentErrors = errorResponses([400, 401, 403, 404], { 403: 'Only an owner (or the admin token) re-parents, and not with a personal API key' });

/**
 * What a credential created by this request is made by (docs/protocol.md
 * "Credentials and what made them"). The access table already refused
 * personal API keys; a server admin's session mints as itself, not as a
 * member.
 */
async function makerOf(ctx: ServerContext, req: FastifyRequest): Promise<Maker> {
  const p = await ctx.access.principalOf(req);
  if (p.type === 'admin') return { kind: 'admin' };
  if (p.type === 'org') return { kind: 'token', credentialId: p.tokenId };
  if (p.type === 'user' && p.credential === 'session') {
    return { kind: 'session', credentialId: p.tokenId, userId: p.userId, asMember: ctx.access.kindOfRequest(req) !== 'admin' };
  }
  throw new ApiError('forbidden', 'this credential may not create organization tokens or registration keys');
}

/** Whom a re-parented credential rests on: the admin token, or the owner (a user's session) asking. */
async function reparentTarget(ctx: ServerContext, req: FastifyRequest): Promise<ReparentTo> {
  const p = await ctx.access.principalOf(req);
  if (p.type === 'admin') return { kind: 'admin' };
  if (p.type === 'user' && p.credential === 'session') return { kind: 'user', userId: p.userId };
  throw new ApiError('forbidden', 'only an owner (with a session) or the admin token may re-parent a credential');
}

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
      return reply.status(201).send(await ctx.store.credentials.createOrgToken(req.params.org, req.body, await makerOf(ctx, req)));
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
    ROUTES.tokenReparent,
    {
      schema: {
        tags: ['tokens'],
        operationId: 'reparentOrgToken',
        summary: 'Make a token rest on the calling owner (or the admin token) instead of the credential that made it',
        params: OrgIdParams,
        response: { 200: json('The token, with its new maker.', OrgToken), ...reparentErrors },
      },
    },
    async (req) => ctx.store.credentials.reparentOrgToken(req.params.org, req.params.id, await reparentTarget(ctx, req)),
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
      const terms = { ttlSeconds: ctx.settings.registrationKeyTtl, maxTtlSeconds: ctx.settings.registrationKeyMaxTtl };
      const tagCaller = await tagCallerFor(ctx, req, req.body.tags);
      return reply.status(201).send(await ctx.store.credentials.createRegistrationKey(req.params.org, req.body, await makerOf(ctx, req), terms, tagCaller));
    },
  );
  app.post(
    ROUTES.registrationKeyReparent,
    {
      schema: {
        tags: ['registration keys'],
        operationId: 'reparentRegistrationKey',
        summary: 'Make a registration key rest on the calling owner (or the admin token) instead of the credential that made it',
        params: OrgIdParams,
        response: { 200: json('The key, with its new maker.', RegistrationKey), ...reparentErrors },
      },
    },
    async (req) => ctx.store.credentials.reparentRegistrationKey(req.params.org, req.params.id, await reparentTarget(ctx, req)),
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
        summary: "The registration key given as the bearer token (its organization_id and organization_name tell an agent where to enroll)",
        response: { 200: json("The key, without its secret, and its organization's name.", OwnRegistrationKey), ...errors },
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
      const organization = await ctx.store.organizations.get(p.orgId);
      // A key outliving its organization could enroll nowhere: no credential, as enrollment would answer.
      if (!organization) throw new ApiError('unauthorized', "the registration key's organization is gone");
      return { ...key, organization_name: organization.name };
    },
  );
}
