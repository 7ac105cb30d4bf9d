import type { Member } from '../../../protocol/wire.js';
import type { CommandGroup } from '../command-spec.js';
import type { CtlContext } from '../context.js';
import { noExtraArgs, requireArg } from '../flag-values.js';
import { resolveId } from '../names.js';
import type { Column } from '../output.js';
import { roleFlag, roleHelp } from './member-role-flag.js';

const memberColumns: ReadonlyArray<Column<Member>> = [
  { header: 'USER', value: (m) => m.user_id },
  { header: 'ROLE', value: (m) => m.role },
  { header: 'EMAIL', value: (m) => m.email ?? '' },
  { header: 'NAME', value: (m) => m.name ?? '' },
  { header: 'SINCE', value: (m) => m.created_at },
];

/** A membership's fields after the user's name, for people (describe.ts places the rest). */
export const MEMBER_FIELDS = ['user_id', 'email', 'role', 'organization_id'];

/** A member by user id, or by its email or name among the organization's members. */
async function memberId(ctx: CtlContext, org: string, ref: string): Promise<string> {
  const list = async () => (await ctx.client.members.list(org, { signal: ctx.signal })).map((m) => ({ ...m, id: m.user_id }));
  return resolveId(ref, list, (m) => [m.email ?? undefined, m.name ?? undefined], 'member', '');
}

export const membersGroup: CommandGroup = {
  name: 'members',
  aliases: ['member'],
  summary: 'members of an organization and their roles (owner, admin, read)',
  commands: [
    {
      kind: 'remote',
      name: 'list',
      summary: 'list the members of an organization',
      flags: ['org', 'output'],
      examples: ['fleetplane ctl members list --org acme'],
      async run(ctx, args) {
        noExtraArgs(args, 0);
        ctx.out.list(await ctx.client.members.list((await ctx.org()).id, { signal: ctx.signal }), memberColumns);
      },
    },
    {
      kind: 'remote',
      name: 'set-role',
      args: '<member>',
      summary: "change a member's role (an organization keeps at least one owner)",
      details: '<member>: its user id, or its email or name.',
      flags: ['org', roleHelp, 'output'],
      examples: ['fleetplane ctl members set-role dana@example.com --role admin --org acme'],
      async run(ctx, args) {
        noExtraArgs(args, 1);
        const org = (await ctx.org()).id;
        const id = await memberId(ctx, org, requireArg(args[0], '<member>'));
        ctx.out.object(await ctx.client.members.setRole(org, id, roleFlag(ctx), { signal: ctx.signal }), MEMBER_FIELDS);
      },
    },
    {
      kind: 'remote',
      name: 'remove',
      aliases: ['delete'],
      args: '<member>',
      summary: 'remove a member (its sessions and API keys lose access to the organization at once)',
      details: '<member>: its user id, or its email or name.',
      flags: ['org', 'output'],
      examples: ['fleetplane ctl members remove dana@example.com --org acme'],
      async run(ctx, args) {
        noExtraArgs(args, 1);
        const org = (await ctx.org()).id;
        const id = await memberId(ctx, org, requireArg(args[0], '<member>'));
        await ctx.client.members.remove(org, id, { signal: ctx.signal });
        ctx.out.done(`removed member ${id}`, { user_id: id, deleted: true });
      },
    },
  ],
};
