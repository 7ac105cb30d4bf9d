import type { RegistrationKey } from '../../../client/index.js';
import type { CommandGroup } from '../command-spec.js';
import { orgLabel, type CtlContext, type OrgRef } from '../context.js';
import { expiresAt } from '../duration.js';
import { dataFlag, defined, listFlag, noExtraArgs, requireArg } from '../flag-values.js';
import { resolveId } from '../names.js';
import type { Column } from '../output.js';
import { shownOnce } from './shown-once.js';
import { madeBy } from './made-by.js';

const columns: ReadonlyArray<Column<RegistrationKey>> = [
  { header: 'ID', value: (k) => k.id },
  { header: 'SINGLE USE', value: (k) => k.single_use },
  { header: 'USED', value: (k) => k.used },
  { header: 'EPHEMERAL', value: (k) => k.ephemeral },
  // Keys listed by a server before v1.12 carry no tags.
  { header: 'TAGS', value: (k) => (k.tags ?? []).join(',') },
  { header: 'EXPIRES', value: (k) => k.expires_at ?? 'never' },
  { header: 'CREATED', value: (k) => k.created_at, wide: true },
  { header: 'MADE BY', value: (k) => madeBy(k.created_by), wide: true },
  { header: 'DESCRIPTION', value: (k) => k.description },
];

/** A key's fields after its id, for people (describe.ts places the rest); `key`, the secret, is in a create's answer only. */
const KEY_FIELDS = ['description', 'key', 'single_use', 'used', 'ephemeral', 'tags', 'organization_id'];

/** The one `<key>` argument: its organization, as given, and its id (by id, or by a description no other has). */
async function named(ctx: CtlContext, args: readonly string[]): Promise<{ org: OrgRef; ref: string; id: string }> {
  noExtraArgs(args, 1);
  const ref = requireArg(args[0], '<key>');
  const org = await ctx.org();
  const list = () => ctx.client.registrationKeys.list(org.id, { signal: ctx.signal });
  return { org, ref, id: await resolveId(ref, list, (k) => [k.description], 'registration key', ` in organization ${orgLabel(org)}`) };
}

export const registrationKeysGroup: CommandGroup = {
  name: 'registration-keys',
  aliases: ['registration-key', 'keys', 'key'],
  summary: 'registration keys: what agents enroll with',
  commands: [
    {
      kind: 'remote',
      name: 'list',
      summary: 'list the registration keys of an organization (never the keys themselves)',
      flags: ['org', 'output'],
      examples: ['fleetplane ctl registration-keys list --org acme'],
      async run(ctx, args) {
        noExtraArgs(args, 0);
        ctx.out.list(await ctx.client.registrationKeys.list((await ctx.org()).id, { signal: ctx.signal }), columns);
      },
    },
    {
      kind: 'remote',
      name: 'get',
      args: '<key>',
      summary: 'show one registration key (never the key itself)',
      details: [
        '<key>: its id, or its description when no other key has it.',
        '',
        'Output: a field a line, like kubectl describe: id, then description, single_use, used, ephemeral, tags',
        'and organization_id, the other fields, created_by and the timestamps last; lists and nested objects as',
        'indented YAML. -o json and -o yaml print the key exactly as the server sent it.',
      ].join('\n'),
      flags: ['org', 'output'],
      examples: ['fleetplane ctl registration-keys get "rack 4" --org acme', 'fleetplane ctl registration-keys get "rack 4" --org acme -o json | jq -r .expires_at'],
      async run(ctx, args) {
        const { org, id } = await named(ctx, args);
        ctx.out.object(await ctx.client.registrationKeys.get(org.id, id, { signal: ctx.signal }), KEY_FIELDS);
      },
    },
    {
      kind: 'remote',
      name: 'create',
      summary: 'create a registration key; the key is printed this once',
      flags: [
        'org',
        'single-use',
        'ephemeral',
        { name: 'tags', help: 'tags of the devices the key enrolls, comma separated (tag:web,tag:db)' },
        'description',
        { name: 'expires-at', help: "RFC 3339 expiry (default: the server's --registration-key-ttl from now, 1 hour unless set; at most its --registration-key-max-ttl)" },
        'expires-in',
        'data',
        'output',
      ],
      examples: [
        'fleetplane ctl registration-keys create --org acme --description "rack 4"',
        'fleetplane ctl registration-keys create --org acme --ephemeral --description "CI runners" --expires-in 7d',
        'fleetplane ctl registration-keys create --org acme --tags tag:web --description "web tier"',
        'fleetplane ctl registration-keys create --org acme --single-use -o json | jq -r .key',
      ],
      async run(ctx, args) {
        noExtraArgs(args, 0);
        const f = ctx.flags;
        const body = {
          ...(await dataFlag(f.string('data'))),
          ...defined({
            description: f.string('description'),
            single_use: f.boolean('single-use'),
            ephemeral: f.boolean('ephemeral'),
            tags: listFlag(f.string('tags')),
            expires_at: expiresAt(f.string('expires-at'), f.string('expires-in'), ctx.out.now()),
          }),
        };
        const created = await ctx.client.registrationKeys.create((await ctx.org()).id, body, { signal: ctx.signal });
        ctx.out.object(created, KEY_FIELDS);
        shownOnce(ctx, 'registration key');
        if (ctx.out.forPeople) ctx.stderr.write(`note: the key expires at ${created.expires_at ?? 'never'}\n`);
      },
    },
    {
      kind: 'remote',
      name: 'reparent',
      args: '<key>',
      summary: 'make a registration key rest on you (an owner) instead of the credential that made it',
      details: '<key>: its id, or its description when no other key has it. A key ends with what made it (a session, an organization token): an owner keeps one by re-parenting it.',
      flags: ['org', 'output'],
      examples: ['fleetplane ctl registration-keys reparent "rack 4" --org acme'],
      async run(ctx, args) {
        const { org, id } = await named(ctx, args);
        ctx.out.object(await ctx.client.registrationKeys.reparent(org.id, id, { signal: ctx.signal }), KEY_FIELDS);
      },
    },
    {
      kind: 'remote',
      name: 'delete',
      args: '<key>',
      summary: 'delete a registration key (devices it enrolled stay)',
      details: '<key>: its id, or its description when no other key has it.',
      flags: ['org', 'output'],
      examples: ['fleetplane ctl registration-keys delete "rack 4" --org acme'],
      async run(ctx, args) {
        const { org, ref, id } = await named(ctx, args);
        await ctx.client.registrationKeys.delete(org.id, id, { signal: ctx.signal });
        ctx.out.done(`deleted registration key ${ref === id ? id : `${ref} (${id})`}`, { id, deleted: true });
      },
    },
  ],
};
