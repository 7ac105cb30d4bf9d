import type { AuditKind } from '../../protocol/wire.js';
import { UsageError } from '../exit-codes.js';
import { orgLabel, type CtlContext } from './context.js';
import { cliKind } from './kinds.js';
import { isId, NameError } from './names.js';

/** The kinds whose objects `ctl audit --object` finds by name. */
const NAMED_KINDS = ['device', 'security_group', 'organization'] as const satisfies readonly AuditKind[];
type NamedKind = (typeof NAMED_KINDS)[number];

interface Candidate {
  readonly kind: NamedKind;
  readonly id: string;
  readonly name: string;
}

const isNamedKind = (kind: AuditKind): kind is NamedKind => NAMED_KINDS.some((k) => k === kind);

/** The live objects of `kind` in the command's organization, each with what it answers to. */
async function candidates(ctx: CtlContext, kind: NamedKind): Promise<Array<Candidate & { names: ReadonlyArray<string | null> }>> {
  const org = await ctx.org();
  const opts = { signal: ctx.signal };
  if (kind === 'device') {
    const { items } = await ctx.client.devices.list(org.id, opts);
    return items.map((d) => ({ kind, id: d.id, name: d.hostname, names: [d.hostname, d.tunnel_ip] }));
  }
  const organization = await ctx.client.organizations.get(org.id, opts);
  if (kind === 'organization') return [{ kind, id: organization.id, name: organization.name, names: [organization.name] }];
  // While a policy document manages the groups, they live in the organization (same ids as the entries name).
  const groups = organization.policy ? organization.policy.groups : (await ctx.client.securityGroups.list(org.id, opts)).items;
  return groups.map((g) => ({ kind, id: g.id, name: g.name ?? g.id, names: [g.name] }));
}

/**
 * `ctl audit --object`: an id as given; otherwise the id of the one live
 * device (hostname or tunnel IP), security group (name) or the organization
 * itself (name) that `ref` names in the command's organization, among the
 * kind `kind` when given. No match, or several, is a NameError naming the
 * candidates: never an empty listing of a name the server can't know.
 */
export async function resolveAuditObject(ctx: CtlContext, ref: string, kind: AuditKind | undefined): Promise<string> {
  if (isId(ref)) return ref;
  if (kind !== undefined && !isNamedKind(kind)) {
    throw new UsageError(`--object ${JSON.stringify(ref)}: ${cliKind(kind)} objects are found by id only; names work for ${NAMED_KINDS.map(cliKind).join(', ')}`);
  }
  const kinds = kind === undefined ? NAMED_KINDS : [kind];
  const found = (await Promise.all(kinds.map((k) => candidates(ctx, k)))).flat().filter((c) => c.names.includes(ref));
  const where = ` in organization ${orgLabel(await ctx.org())}`;
  const [only, second] = found;
  if (only === undefined) {
    throw new NameError(
      `no ${kinds.map(cliKind).join(', ')} named "${ref}"${where}; a deleted object is found by id only (ctl audit -o wide shows OBJECT ID)`,
    );
  }
  if (second !== undefined) {
    const listed = found.map((c) => `${cliKind(c.kind)} ${c.name} (${c.id})`).join(', ');
    throw new NameError(`"${ref}" is ambiguous${where}: ${listed}; add --kind or give an id`);
  }
  return only.id;
}
