import { Type } from '@sinclair/typebox';
import {
  CreatedOrgToken,
  CreatedRegistrationKey,
  ErrorResponse,
  OrgIdParams,
  OrgParams,
  OrgToken,
  OrgTokenCreate,
  RegistrationKey,
  RegistrationKeyCreate,
  ROUTES,
} from '../../../protocol/index.js';
import type { App } from '../app.js';
import type { ServerContext } from '../context.js';
import { notFound } from '../../errors.js';
import { requireOrgAccess } from '../auth.js';
import { authenticated, principalOf } from './shared.js';

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse };

/** Tokens and registration keys: organization admins only, secrets shown once. */
export function registerCredentialRoutes(app: App, ctx: ServerContext): void {
  const auth = authenticated(ctx);
  const admin = async (req: { params: { org: string } } & Parameters<typeof principalOf>[0]) =>
    requireOrgAccess(await principalOf(req, ctx), req.params.org, 'write');

  app.post(
    ROUTES.tokens,
    { ...auth, schema: { tags: ['tokens'], summary: 'Create an organization token (shown once)', params: OrgParams, body: OrgTokenCreate, response: { 201: CreatedOrgToken, ...errors } } },
    async (req, reply) => {
      await admin(req);
      return reply.status(201).send(await ctx.store.createOrgToken(req.params.org, req.body));
    },
  );
  app.get(
    ROUTES.tokens,
    { ...auth, schema: { tags: ['tokens'], summary: 'List organization tokens (without secrets)', params: OrgParams, response: { 200: Type.Object({ items: Type.Array(OrgToken) }), ...errors } } },
    async (req) => {
      await admin(req);
      return { items: await ctx.store.listOrgTokens(req.params.org) };
    },
  );
  app.delete(
    ROUTES.token,
    { ...auth, schema: { tags: ['tokens'], summary: 'Revoke a token (its watch streams end with forbidden)', params: OrgIdParams, response: { 204: Type.Null(), ...errors } } },
    async (req, reply) => {
      await admin(req);
      await ctx.store.revokeOrgToken(req.params.org, req.params.id);
      return reply.status(204).send(null);
    },
  );

  app.post(
    ROUTES.registrationKeys,
    { ...auth, schema: { tags: ['registration keys'], summary: 'Create a registration key (shown once)', params: OrgParams, body: RegistrationKeyCreate, response: { 201: CreatedRegistrationKey, ...errors } } },
    async (req, reply) => {
      await admin(req);
      return reply.status(201).send(await ctx.store.createRegistrationKey(req.params.org, req.body));
    },
  );
  app.get(
    ROUTES.registrationKeys,
    { ...auth, schema: { tags: ['registration keys'], summary: 'List registration keys (without secrets)', params: OrgParams, response: { 200: Type.Object({ items: Type.Array(RegistrationKey) }), ...errors } } },
    async (req) => {
      await admin(req);
      return { items: await ctx.store.listRegistrationKeys(req.params.org) };
    },
  );
  app.get(
    ROUTES.registrationKey,
    { ...auth, schema: { tags: ['registration keys'], summary: 'Get a registration key (without its secret)', params: OrgIdParams, response: { 200: RegistrationKey, ...errors } } },
    async (req) => {
      await admin(req);
      const key = await ctx.store.getRegistrationKey(req.params.org, req.params.id);
      if (!key) throw notFound('registration key');
      return key;
    },
  );
  app.delete(
    ROUTES.registrationKey,
    { ...auth, schema: { tags: ['registration keys'], summary: 'Delete a registration key', params: OrgIdParams, response: { 204: Type.Null(), ...errors } } },
    async (req, reply) => {
      await admin(req);
      await ctx.store.deleteRegistrationKey(req.params.org, req.params.id);
      return reply.status(204).send(null);
    },
  );
}
