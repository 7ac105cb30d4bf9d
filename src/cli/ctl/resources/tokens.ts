import { TOKEN_ROLES, type TokenRole } from '../../../protocol/wire.js';
import type { OrgToken } from '../../../client/index.js';
import { UsageError } from '../../exit-codes.js';
import type { CommandGroup } from '../command-spec.js';
import { orgLabel, type CtlContext, type OrgRef } from '../context.js';
import { expiresAt } from '../duration.js';
import { dataFlag, defined, noExtraArgs, requireArg } from '../flag-values.js';
import { resolveId } from '../names.js';
import type { Column } from '../output.js';
import { shownOnce } from './shown-once.js';
import { madeBy } from './made-by.js';

const columns: ReadonlyArray<Column<OrgToken>> = [
  { header: 'ID', value: (t) => t.id },
  { header: 'ROLE', value: (t) => t.role },
  { header: 'EXPIRES', value: (t) => t.expires_at ?? 'never' },
  { header: 'CREATED', value: (t) => t.created_at },
  { header: 'MADE BY', value: (t) => madeBy(t.created_by), wide: true },
  { header: 'DESCRIPTION', value: (t) => t.description },
];

/** A token's fields after its id, for people (describe.ts places the rest); `token`, the secret, is in a create's answer only. */
const TOKEN_FIELDS = ['role', 'description', 'token', 'organization_id'];

function isRole(v: string): v is TokenRole {
  return (TOKEN_ROLES as readonly string[]).includes(v);
}

/** The one `<token>` argument: its organization, as given, and its id (by id, or by a description no other has). */
async function named(ctx: CtlContext, args: readonly string[]): Promise<{ org: OrgRef; ref: string; id: string }> {
  noExtraArgs(args, 1);
  const ref = requireArg(args[0], '<token>');
  const org = await ctx.org();
  const list = () => ctx.client.tokens.list(org.id, { signal: ctx.signal });
  return { org, ref, id: await resolveId(ref, list, (t) => [t.description], 'token', ` in organization ${orgLabel(org)}`) };
}

export const tokensGroup: CommandGroup = {
  name: 'tokens',
  aliases: ['token'],
  summary: "organization tokens: API access to one organization, role admin or read",
  commands: [
    {
      kind: 'remote',
      name: 'list',
      summary: 'list the tokens of an organization (never their secrets)',
      flags: ['org', 'output'],
      examples: ['fleetplane ctl tokens list --org acme'],
      async run(ctx, args) {
        noExtraArgs(args, 0);
        ctx.out.list(await ctx.client.tokens.list((await ctx.org()).id, { signal: ctx.signal }), columns);
      },
    },
    {
      kind: 'remote',
      name: 'create',
      summary: 'create a token; its secret is printed this once',
      flags: ['org', { name: 'role', help: 'admin (everything in the organization) or read (read and watch); required' }, 'description', 'expires-at', 'expires-in', 'data', 'output'],
      examples: ['fleetplane ctl tokens create --org acme --role read --description ci --expires-in 30d', 'fleetplane ctl tokens create --org acme --role admin -o json | jq -r .token'],
      async run(ctx, args) {
        noExtraArgs(args, 0);
        const role = requireArg(ctx.flags.string('role'), '--role (admin or read)');
        if (!isRole(role)) throw new UsageError(`--role must be one of ${TOKEN_ROLES.join(', ')}`);
        const body = { ...(await dataFlag(ctx.flags.string('data'))), ...defined({ description: ctx.flags.string('description'), expires_at: expiresAt(ctx.flags.string('expires-at'), ctx.flags.string('expires-in'), ctx.out.now()) }), role };
        ctx.out.object(await ctx.client.tokens.create((await ctx.org()).id, body, { signal: ctx.signal }), TOKEN_FIELDS);
        shownOnce(ctx, 'token');
      },
    },
    {
      kind: 'remote',
      name: 'reparent',
      args: '<token>',
      summary: 'make a token rest on you (an owner) instead of the credential that made it, so it outlives that credential',
      details: '<token>: its id, or its description when no other token has it. A token ends with what made it (a session, an organization token): an owner keeps one by re-parenting it; it then lasts while the owner stays a member.',
      flags: ['org', 'output'],
      examples: ['fleetplane ctl tokens reparent ci --org acme'],
      async run(ctx, args) {
        const { org, id } = await named(ctx, args);
        ctx.out.object(await ctx.client.tokens.reparent(org.id, id, { signal: ctx.signal }), TOKEN_FIELDS);
      },
    },
    {
      kind: 'remote',
      name: 'delete',
      aliases: ['revoke'],
      args: '<token>',
      summary: 'revoke a token and what it made (their watch streams end within seconds)',
      details: '<token>: its id, or its description when no other token has it.',
      flags: ['org', 'output'],
      examples: ['fleetplane ctl tokens delete ci --org acme'],
      async run(ctx, args) {
        const { org, ref, id } = await named(ctx, args);
        await ctx.client.tokens.delete(org.id, id, { signal: ctx.signal });
        ctx.out.done(`revoked token ${ref === id ? id : `${ref} (${id})`}`, { id, deleted: true });
      },
    },
  ],
};
