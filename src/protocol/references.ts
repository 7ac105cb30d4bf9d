/**
 * References to devices by what they carry, not by address
 * (docs/protocol.md "Tags and references"): `tag:<name>` names the devices
 * carrying that tag, `group:<name>` (or `group:<id>`) the devices in that
 * security group. Agents resolve them from the objects they watch: each
 * member's tunnel IP and approved routes.
 */

/** The prefix of a tag, and of a reference to the devices carrying it. */
export const TAG_PREFIX = 'tag:';
/** The prefix of a reference to the devices in a security group. */
export const GROUP_PREFIX = 'group:';

/** A tag's name: a DNS label (1..63 of `a-z 0-9 -`, no dash at either end). */
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';

/** `tag:<label>`. */
export const TAG_PATTERN = `^${TAG_PREFIX}${LABEL}$`;

/** A security group's name: a label, and not shaped like a UUID (`group:<id>` names a group by id). */
export const GROUP_NAME_PATTERN = `^(?![0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$)${LABEL}$`;

/**
 * Who may give a tag (an organization's `tag_owners`): `role:owner` (its
 * owners), `role:admin` (its admins and owners, organization admin tokens
 * included), or a user's email.
 */
export const TAG_OWNER_PATTERN = '^(?:role:owner|role:admin|[^@\\s]{1,64}@[^@\\s]{1,255})$';

/** The owners of a tag that are roles, not users. */
export const TAG_OWNER_ROLE = { owner: 'role:owner', admin: 'role:admin' } as const;

/** `tag:<label>` or `group:<label or id>`. */
export const DEVICE_REFERENCE_PATTERN = `^(?:${TAG_PREFIX}|${GROUP_PREFIX})${LABEL}$`;

const TAG = new RegExp(TAG_PATTERN);
const GROUP_NAME = new RegExp(GROUP_NAME_PATTERN);
const REFERENCE = new RegExp(DEVICE_REFERENCE_PATTERN);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export type DeviceReference = { kind: 'tag'; tag: string } | { kind: 'group'; name: string } | { kind: 'group'; id: string };

export function isTag(text: string): boolean {
  return TAG.test(text);
}

export function isGroupName(text: string): boolean {
  return GROUP_NAME.test(text);
}

/** The reference `text` is, or undefined when it is none. `tag` keeps its prefix (`tag:web`), as devices carry it. */
export function parseDeviceReference(text: string): DeviceReference | undefined {
  if (!REFERENCE.test(text)) return undefined;
  if (text.startsWith(TAG_PREFIX)) return { kind: 'tag', tag: text };
  const rest = text.slice(GROUP_PREFIX.length);
  return UUID.test(rest) ? { kind: 'group', id: rest } : { kind: 'group', name: rest };
}

/** Tags as objects carry them: sorted, without repeats. */
export function normalTags(tags: readonly string[]): string[] {
  return [...new Set(tags)].sort();
}

/** What binding a device to a group looks at. */
export interface BindableGroup {
  readonly id: string;
  readonly name: string | null;
  readonly applies_to?: readonly string[] | undefined;
}

/** Groups in binding order: by name, unnamed ones last by id. */
export function bindingOrder<G extends BindableGroup>(groups: readonly G[]): G[] {
  const key = (g: G): string => (g.name === null ? `\u{10FFFF}${g.id}` : g.name);
  return [...groups].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/**
 * The group a device is in: the one its `security_group_id` names, or else
 * the first of `ordered` (bindingOrder) whose `applies_to` holds one of its
 * tags; null: none (everything on the tunnel is accepted).
 */
export function boundGroupId(device: { readonly security_group_id: string | null; readonly tags?: readonly string[] | undefined }, ordered: readonly BindableGroup[]): string | null {
  if (device.security_group_id !== null) return device.security_group_id;
  const tags = device.tags ?? [];
  if (tags.length === 0) return null;
  return ordered.find((g) => (g.applies_to ?? []).some((t) => tags.includes(t)))?.id ?? null;
}
