/**
 * The TagCaller of an authorized request: what the organization's
 * `tag_owners` are matched against when a write gives or takes tags.
 */
import type { FastifyRequest } from 'fastify';
import type { TagCaller } from '../store/index.js';
import type { ServerContext } from './context.js';

export async function tagCallerOf(ctx: ServerContext, req: FastifyRequest): Promise<TagCaller> {
  const kind = ctx.access.kindOfRequest(req);
  if (kind === 'admin') return { all: true };
  const role = kind === 'org-owner' ? 'owner' : kind === 'org-admin' ? 'admin' : 'none';
  const p = await ctx.access.principalOf(req);
  // Only a user has an email; one whose user row is gone owns nothing by email.
  const email = p.type === 'user' ? (await ctx.store.logins.getUser(p.userId))?.email ?? undefined : undefined;
  return { all: false, role, email };
}

const GIVES_NO_TAGS: TagCaller = { all: false, role: 'none', email: undefined };

/**
 * tagCallerOf, looked up only for a request whose body sets `tags`: the
 * writes that change no tag (an agent's endpoint PATCH) cost nothing more.
 */
export async function tagCallerFor(ctx: ServerContext, req: FastifyRequest, tags: readonly string[] | undefined): Promise<TagCaller> {
  return tags === undefined ? GIVES_NO_TAGS : tagCallerOf(ctx, req);
}
