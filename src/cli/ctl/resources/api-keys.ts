import type { ApiKey } from '../../../protocol/wire.js';
import type { CommandGroup } from '../command-spec.js';
import { expiresAt } from '../duration.js';
import { defined, noExtraArgs, requireArg } from '../flag-values.js';
import { resolveId, resolveOrganization } from '../names.js';
import type { Column } from '../output.js';
import { roleFlag, roleHelp } from './member-role-flag.js';
import { shownOnce } from './shown-once.js';

const apiKeyColumns: ReadonlyArray<Column<ApiKey>> = [
  { header: 'ID', value: (k) => k.id },
  { header: 'ROLE', value: (k) => k.role },
  { header: 'ORGANIZATIONS', value: (k) => k.organizations.join(',') },
  { header: 'EXPIRES', value: (k) => k.expires_at },
  { header: 'DESCRIPTION', value: (k) => k.description },
];

export const apiKeysGroup: CommandGroup = {
  name: 'api-keys',
  aliases: ['api-key'],
  summary: 'your personal API keys: act as you, in some organizations, with at most a role',
  commands: [
    {
      kind: 'remote',
      name: 'create',
      summary: 'create an API key (needs a session: ctl login); its secret is printed this once',
      flags: ['organizations', roleHelp, 'description', { name: 'expires-at', help: 'RFC 3339 expiry (server default 90 days, at most 365 days)' }, 'expires-in', 'output'],
      examples: ['fleetplane ctl api-keys create --organizations acme --role read --description ci'],
      async run(ctx, args) {
        noExtraArgs(args, 0);
        const expires = expiresAt(ctx.flags.string('expires-at'), ctx.flags.string('expires-in'), ctx.out.now());
        const role = roleFlag(ctx);
        const refs = ctx.flags.list('organizations').flatMap((v) => v.split(',')).filter((v) => v !== '');
        const organizations = refs.length === 0 ? [(await ctx.org()).id] : await Promise.all(refs.map(async (r) => (await resolveOrganization(ctx.client, r, ctx.signal)).id));
        const body = { organizations, role, ...defined({ description: ctx.flags.string('description'), expires_at: expires }) };
        ctx.out.object(await ctx.client.apiKeys.create(body, { signal: ctx.signal }), ['role', 'description', 'key', 'organizations', 'user_id']);
        shownOnce(ctx, 'key');
      },
    },
    {
      kind: 'remote',
      name: 'list',
      summary: 'list your active API keys (never their secrets)',
      flags: ['user', 'output'],
      examples: ['fleetplane ctl api-keys list'],
      async run(ctx, args) {
        noExtraArgs(args, 0);
        ctx.out.list(await ctx.client.apiKeys.list({ signal: ctx.signal, ...defined({ user: ctx.flags.string('user') }) }), apiKeyColumns);
      },
    },
    {
      kind: 'remote',
      name: 'revoke',
      aliases: ['delete'],
      args: '<key>',
      summary: 'revoke an API key (its watch streams end within seconds)',
      details: '<key>: its id, or its description when no other key has it.',
      flags: ['user', 'output'],
      examples: ['fleetplane ctl api-keys revoke ci'],
      async run(ctx, args) {
        noExtraArgs(args, 1);
        const user = defined({ user: ctx.flags.string('user') });
        const list = () => ctx.client.apiKeys.list({ signal: ctx.signal, ...user });
        const id = await resolveId(requireArg(args[0], '<key>'), list, (k) => [k.description], 'API key', '');
        await ctx.client.apiKeys.revoke(id, { signal: ctx.signal, ...user });
        ctx.out.done(`revoked API key ${id}`, { id, deleted: true });
      },
    },
  ],
};
