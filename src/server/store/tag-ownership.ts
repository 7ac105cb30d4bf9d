/**
 * Who may give which tag (docs/protocol.md "Tags and references"): the
 * organization's `tag_owners`, as Tailscale's `tagOwners`. A tag decides
 * which rules let a device in, so giving one is giving that access.
 */
import { TAG_OWNER_ROLE, type TagOwners } from '../../protocol/index.js';
import { ApiError, validationFailed } from '../errors.js';

/**
 * The caller of a write that gives or takes tags: `all` for the admin token
 * and server admins; otherwise its role in the organization (organization
 * admin tokens are `admin`) and, for a user, its email.
 */
export type TagCaller = { all: true } | { all: false; role: 'owner' | 'admin' | 'none'; email: string | undefined };

function owns(owners: readonly string[], caller: TagCaller): boolean {
  if (caller.all) return true;
  const email = caller.email?.toLowerCase();
  const admin = caller.role === 'admin' || caller.role === 'owner';
  return owners.some(
    (o) => (o === TAG_OWNER_ROLE.admin && admin) || (o === TAG_OWNER_ROLE.owner && caller.role === 'owner') || (email !== undefined && o.toLowerCase() === email),
  );
}

/**
 * Throws unless `caller` may change a tag list from `before` to `after`:
 * with `tag_owners` declared, every tag added or removed must be declared
 * (400 naming it at `path/<i>`) and owned by the caller (403). With none
 * declared, any organization admin gives any tag.
 */
export function checkTagChange(tagOwners: TagOwners, before: readonly string[], after: readonly string[], caller: TagCaller, path: string): void {
  if (Object.keys(tagOwners).length === 0) return;
  const changed = new Set([...before.filter((t) => !after.includes(t)), ...after.filter((t) => !before.includes(t))]);
  for (const tag of changed) {
    const owners = tagOwners[tag];
    const at = after.indexOf(tag);
    const where = at >= 0 ? `${path}/${at}` : path;
    if (owners === undefined) throw validationFailed(where, `a tag the organization's tag_owners declares (${JSON.stringify(tag)} is not)`);
    if (!owns(owners, caller)) {
      throw new ApiError('forbidden', `only its owners may give or take ${tag} (tag_owners: ${owners.join(', ') || 'none'})`, { path: where, tag });
    }
  }
}
