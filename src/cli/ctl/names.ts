import { FORMATS } from '../../protocol/wire.js';
import type { FleetplaneClient } from '../../client/index.js';
import type { OrgRef } from './context.js';

/**
 * A name that matches no object, or several: exit 1 (it depends on the
 * server's state, not on the command line), with the candidates' ids.
 */
export class NameError extends Error {
  override name = 'NameError';
}

/** Ids are lower-case UUIDs (docs/protocol.md); anything else is a name. */
export function isId(ref: string): boolean {
  return FORMATS.uuid(ref);
}

/**
 * The one item `ref` names. `names` gives what an item answers to
 * (its name, hostname, description, ...). `what`: the singular noun;
 * `scope`: where it was looked for, e.g. ` in organization acme`.
 */
export function pickByName<T extends { id: string }>(
  items: readonly T[],
  ref: string,
  names: (item: T) => ReadonlyArray<string | undefined>,
  what: string,
  scope = '',
): T {
  const found = items.filter((item) => names(item).includes(ref));
  const [only, second] = found;
  if (only === undefined) throw new NameError(`no ${what} named "${ref}"${scope}`);
  if (second !== undefined) {
    const ids = found.map((f) => f.id).join(', ');
    throw new NameError(`"${ref}" is ambiguous: ${found.length} ${what}s${scope} have that name (${ids}); use an id instead`);
  }
  return only;
}

/** An organization by id or by its name among those the token lists (unique since v1.16; an older server may hold two with one name, which stays refused as ambiguous). */
export async function resolveOrganization(client: FleetplaneClient, ref: string, signal: AbortSignal | undefined): Promise<OrgRef> {
  if (isId(ref)) return { id: ref, name: undefined };
  const { items } = await client.organizations.list({ signal });
  const org = pickByName(items, ref, (o) => [o.name], 'organization');
  return { id: org.id, name: org.name };
}

/** An id, or the id of the one item `ref` names among those `list` gives. */
export async function resolveId<T extends { id: string }>(
  ref: string,
  list: () => Promise<readonly T[]>,
  names: (item: T) => ReadonlyArray<string | undefined>,
  what: string,
  scope: string,
): Promise<string> {
  if (isId(ref)) return ref;
  return pickByName(await list(), ref, names, what, scope).id;
}
