import { TOKEN_ROLES, type TokenRole } from '../../protocol/index.js';
import type { OrgToken, RegistrationKey } from '../../client/index.js';
import { dataFlag, defined, requireArg } from './args.js';
import { orgOf, type CtlContext } from './context.js';
import type { Column } from './output.js';
import { UsageError } from './usage.js';

const tokenColumns: ReadonlyArray<Column<OrgToken>> = [
  { header: 'ID', value: (t) => t.id },
  { header: 'ROLE', value: (t) => t.role },
  { header: 'EXPIRES', value: (t) => t.expires_at },
  { header: 'CREATED', value: (t) => t.created_at },
  { header: 'DESCRIPTION', value: (t) => t.description },
];

const keyColumns: ReadonlyArray<Column<RegistrationKey>> = [
  { header: 'ID', value: (k) => k.id },
  { header: 'SINGLE USE', value: (k) => k.single_use },
  { header: 'USED', value: (k) => k.used },
  { header: 'EXPIRES', value: (k) => k.expires_at },
  { header: 'DESCRIPTION', value: (k) => k.description },
];

function isRole(v: string): v is TokenRole {
  return (TOKEN_ROLES as readonly string[]).includes(v);
}

function shownOnce(ctx: CtlContext, what: string): void {
  if (ctx.out.mode === 'table') ctx.stderr.write(`note: the ${what} is shown only this once; store it now\n`);
}

/** `tokens create|list|delete`. */
export async function runTokens(ctx: CtlContext, verb: string | undefined, rest: string[]): Promise<void> {
  const org = orgOf(ctx);
  const v = ctx.args.values;
  switch (verb) {
    case 'create': {
      const role = requireArg(v.role, '--role (admin or read)');
      if (!isRole(role)) throw new UsageError(`--role must be one of ${TOKEN_ROLES.join(', ')}`);
      const body = { ...(await dataFlag(v.data)), ...defined({ description: v.description, expires_at: v['expires-at'] }), role };
      const created = await ctx.client.tokens.create(org, body, { signal: ctx.signal });
      ctx.out.object(created);
      return shownOnce(ctx, 'token');
    }
    case 'list':
      return ctx.out.list(await ctx.client.tokens.list(org, { signal: ctx.signal }), tokenColumns);
    case 'delete': {
      const id = requireArg(rest[0], 'token id');
      await ctx.client.tokens.delete(org, id, { signal: ctx.signal });
      return ctx.out.done(`revoked token ${id}`, { id, deleted: true });
    }
    default:
      throw new UsageError(verb === undefined ? 'missing verb for tokens' : `unknown verb ${JSON.stringify(verb)} for tokens`);
  }
}

/** `registration-keys create|list|delete`. */
export async function runRegistrationKeys(ctx: CtlContext, verb: string | undefined, rest: string[]): Promise<void> {
  const org = orgOf(ctx);
  const v = ctx.args.values;
  switch (verb) {
    case 'create': {
      const body = {
        ...(await dataFlag(v.data)),
        ...defined({ description: v.description, single_use: v['single-use'], expires_at: v['expires-at'] }),
      };
      const created = await ctx.client.registrationKeys.create(org, body, { signal: ctx.signal });
      ctx.out.object(created);
      return shownOnce(ctx, 'registration key');
    }
    case 'list':
      return ctx.out.list(await ctx.client.registrationKeys.list(org, { signal: ctx.signal }), keyColumns);
    case 'delete': {
      const id = requireArg(rest[0], 'registration key id');
      await ctx.client.registrationKeys.delete(org, id, { signal: ctx.signal });
      return ctx.out.done(`deleted registration key ${id}`, { id, deleted: true });
    }
    default:
      throw new UsageError(verb === undefined ? 'missing verb for registration-keys' : `unknown verb ${JSON.stringify(verb)} for registration-keys`);
  }
}
