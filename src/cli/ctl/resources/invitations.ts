import type { Invitation } from '../../../protocol/wire.js';
import { UsageError } from '../../exit-codes.js';
import type { CommandGroup } from '../command-spec.js';
import { expiryFields } from '../duration.js';
import { defined, noExtraArgs, requireArg } from '../flag-values.js';
import { resolveId } from '../names.js';
import type { Column } from '../output.js';
import { roleFlag, roleHelp } from './member-role-flag.js';
import { MEMBER_FIELDS } from './members.js';
import { shownOnce } from './shown-once.js';

const invitationColumns: ReadonlyArray<Column<Invitation>> = [
  { header: 'ID', value: (i) => i.id },
  { header: 'INVITEE', value: (i) => i.email ?? (i.subject === null ? '(token)' : `subject:${i.subject}`) },
  { header: 'ROLE', value: (i) => i.role },
  { header: 'EXPIRES', value: (i) => i.expires_at },
  { header: 'BY', value: (i) => i.created_by },
];

/** An invitation's fields after its id, for people (describe.ts places the rest); `token` is in a create's answer only. */
const INVITATION_FIELDS = ['email', 'subject', 'role', 'token', 'organization_id'];

export const invitationsGroup: CommandGroup = {
  name: 'invitations',
  aliases: ['invitation', 'invite', 'invites'],
  summary: 'invitations to an organization, accepted at the invitee’s next login',
  commands: [
    {
      kind: 'remote',
      name: 'create',
      summary: 'invite a user by email or subject, or (neither) whoever presents the printed token',
      flags: ['org', 'email', 'subject', roleHelp, { name: 'expires-in', help: 'invitation lifetime: 7d, 12h, 30m or seconds (server default 7 days, at most 30 days)' }, 'expires-at', 'output'],
      examples: [
        'fleetplane ctl invitations create --email dana@example.com --role admin --org acme',
        'fleetplane ctl invitations create --role owner --org acme -o json | jq -r .token',
      ],
      async run(ctx, args) {
        noExtraArgs(args, 0);
        const email = ctx.flags.string('email');
        const subject = ctx.flags.string('subject');
        if (email !== undefined && subject !== undefined) throw new UsageError('give at most one of --email and --subject');
        const body = {
          ...defined({ email, subject }),
          ...expiryFields(ctx.flags.string('expires-at'), ctx.flags.string('expires-in')),
          role: roleFlag(ctx),
        };
        const created = await ctx.client.members.invite((await ctx.org()).id, body, { signal: ctx.signal });
        ctx.out.object(created, INVITATION_FIELDS);
        if (created.token !== undefined) shownOnce(ctx, 'invitation token (the invitee accepts it with: fleetplane ctl invitations accept TOKEN)');
      },
    },
    {
      kind: 'remote',
      name: 'accept',
      args: '<token>',
      summary: 'accept an invitation by its token, as the user signed in (fleetplane ctl login)',
      flags: ['output'],
      examples: ['fleetplane ctl invitations accept fpi_...'],
      async run(ctx, args) {
        noExtraArgs(args, 1);
        ctx.out.object(await ctx.client.members.acceptInvitation(requireArg(args[0], '<token>'), { signal: ctx.signal }), MEMBER_FIELDS);
      },
    },
    {
      kind: 'remote',
      name: 'list',
      summary: 'list the open invitations of an organization',
      flags: ['org', 'output'],
      examples: ['fleetplane ctl invitations list --org acme'],
      async run(ctx, args) {
        noExtraArgs(args, 0);
        ctx.out.list(await ctx.client.members.invitations((await ctx.org()).id, { signal: ctx.signal }), invitationColumns);
      },
    },
    {
      kind: 'remote',
      name: 'revoke',
      aliases: ['delete'],
      args: '<invitation>',
      summary: 'revoke an open invitation',
      details: '<invitation>: its id, or the email it was sent to.',
      flags: ['org', 'output'],
      examples: ['fleetplane ctl invitations revoke dana@example.com --org acme'],
      async run(ctx, args) {
        noExtraArgs(args, 1);
        const org = (await ctx.org()).id;
        const list = () => ctx.client.members.invitations(org, { signal: ctx.signal });
        const id = await resolveId(requireArg(args[0], '<invitation>'), list, (i) => [i.email ?? undefined, i.subject ?? undefined], 'invitation', '');
        await ctx.client.members.revokeInvitation(org, id, { signal: ctx.signal });
        ctx.out.done(`revoked invitation ${id}`, { id, deleted: true });
      },
    },
  ],
};
