import type { JSX } from 'preact';
import { boundGroupId } from '../../protocol/wire.js';
import type { DeviceObject } from '../../client/index.js';
import { useEnforcedGroups } from '../live/groups.js';
import { href } from '../router.js';

/**
 * The security group a device is in, as its agent binds it: the group its
 * `security_group_id` names, or else the first by name whose `applies_to`
 * holds one of its tags; among the policy document's groups while one
 * manages the organization, else the objects.
 */
export function DeviceGroup(props: { org: string; device: Pick<DeviceObject, 'security_group_id' | 'tags'> }): JSX.Element {
  const enforced = useEnforcedGroups(props.org);
  const id = boundGroupId(props.device, enforced.groups);
  if (id === null) return <span class="muted" data-testid="device-group">none: it accepts everything on the tunnel</span>;
  const group = enforced.groups.find((g) => g.id === id);
  const tags = props.device.tags ?? [];
  const byTag = props.device.security_group_id === null ? group?.applies_to?.find((t) => tags.includes(t)) : undefined;
  return (
    <span data-testid="device-group" data-group-id={id} data-source={enforced.source}>
      {group ? <a href={href('security-groups', props.org)}>{group.name ?? (group.description || group.id)}</a> : <code>{id}</code>}
      {byTag ? <span class="muted"> (by its tag {byTag})</span> : null}
      {enforced.source === 'policy' ? <span class="muted"> (from the policy document)</span> : null}
      {!group && enforced.synced ? <span class="muted"> (no such group)</span> : null}
    </span>
  );
}
