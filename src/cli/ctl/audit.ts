import { AUDIT_ACTIONS, type AuditEntry } from '../../protocol/wire.js';
import type { AuditFilter } from '../../client/index.js';
import { UsageError } from '../exit-codes.js';
import { changesCell, otherDetails } from './audit-format.js';
import { resolveAuditObject } from './audit-object.js';
import type { RemoteCommand } from './command-spec.js';
import { pastTime } from './duration.js';
import { intFlag, noExtraArgs } from './flag-values.js';
import { auditKind, cliKind } from './kinds.js';
import type { Column } from './output.js';

const DEFAULT_SHOWN = 100;

const COLUMNS: ReadonlyArray<Column<AuditEntry>> = [
  { header: 'TIME', value: (e) => e.at },
  { header: 'ACTOR', value: (e) => (e.actor.id === null ? e.actor.type : `${e.actor.type}:${e.actor.id}`) },
  { header: 'ACTION', value: (e) => e.action },
  { header: 'KIND', value: (e) => cliKind(e.kind) },
  // Entries from before v1.18, and objects without a name, have only their id.
  { header: 'OBJECT', value: (e) => e.object_name ?? e.object_id ?? '-' },
  { header: 'REVISION', value: (e) => (e.revision === null ? '-' : String(e.revision)) },
  { header: 'SOURCE', value: (e) => e.source ?? '-' },
  { header: 'OBJECT ID', value: (e) => e.object_id ?? '-', wide: true },
  { header: 'USER AGENT', value: (e) => e.user_agent ?? '-', wide: true },
  { header: 'CHANGES', value: changesCell, wide: true },
  { header: 'DETAILS', value: otherDetails, wide: true },
];

function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  const found = allowed.find((a) => a === value);
  if (found === undefined) throw new UsageError(`--${flag} must be one of ${allowed.join(', ')}, not ${JSON.stringify(value)}`);
  return found;
}

export const auditCommand: RemoteCommand = {
  kind: 'remote',
  name: 'audit',
  summary: "an organization's audit log: who changed what, when and from where (newest first)",
  details: [
    'Reads GET .../audit page by page, newest first, up to --limit entries. Admins read it; a read token or',
    'read member only where the organization sets audit_readable_by_read. ACTOR is TYPE:ID (admin, token,',
    'device, registration_key, user, api_key, system, anonymous); KIND is spelled as ctl watch spells it',
    "(security-group). OBJECT is the object's name when the entry was written (its id when it had none, or",
    'for entries from before v1.18); denied entries are refused writes, their OBJECT the route. -o wide adds',
    'the object id, the user agent, CHANGES (each changed field before → after: name: web-1 → web-2) and',
    'the other details; -o json prints the entries as the API gives them (kind as stored: security_group).',
    '--object takes an id, or the name of a device (hostname or tunnel IP), a security group or the',
    'organization; a name matching none, or several (add --kind), is an error. A deleted object is found by',
    'id only. --since and --until take an RFC 3339 time or a duration ago (1h: from an hour ago on). --kind',
    'takes any spelling of a kind: security-group, security-groups, security_group or sg alike.',
  ].join('\n'),
  flags: ['org', 'output', 'since', 'until', 'actor', 'object', 'action', 'kind', 'limit'],
  examples: [
    'fleetplane ctl audit --org acme',
    'fleetplane ctl audit --org acme --kind security-group --action update --since 2030-01-01T00:00:00Z',
    'fleetplane ctl audit --org acme --kind devices --since 7d --until 1d',
    'fleetplane ctl audit --org acme --object web-1 -o wide',
    'fleetplane ctl audit --actor token:5b0c... -o json | jq ".[].object_id"',
  ],
  async run(ctx, args) {
    noExtraArgs(args, 0);
    const shown = intFlag('limit', ctx.flags.string('limit')) ?? DEFAULT_SHOWN;
    if (shown < 1) throw new UsageError('--limit must be at least 1');
    const now = ctx.out.now();
    const kindFlag = ctx.flags.string('kind');
    const kind = kindFlag === undefined ? undefined : auditKind('kind', kindFlag);
    const object = ctx.flags.string('object');
    const filter: AuditFilter = {
      since: pastTime('since', ctx.flags.string('since'), now),
      until: pastTime('until', ctx.flags.string('until'), now),
      actor: ctx.flags.string('actor'),
      action: oneOf('action', ctx.flags.string('action'), AUDIT_ACTIONS),
      kind,
      // Last: the flags above are checked before any request.
      object: object === undefined ? undefined : await resolveAuditObject(ctx, object, kind),
      limit: Math.min(shown, 500),
    };
    const org = await ctx.org();
    const entries: AuditEntry[] = [];
    for await (const e of ctx.client.audit.entries(org.id, filter, { signal: ctx.signal })) {
      entries.push(e);
      if (entries.length >= shown) break;
    }
    ctx.out.list(entries, COLUMNS);
  },
};
