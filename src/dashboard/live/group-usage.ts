import { useMemo } from 'preact/hooks';
import { boundGroupId, type BindableGroup } from '../../protocol/wire.js';
import { useInformerItems } from './hooks.js';

/** How many of the organization's devices each group holds, and whether the devices are listed yet. */
export interface GroupUsage {
  counts: ReadonlyMap<string, number>;
  synced: boolean;
}

/**
 * Devices per group, live from the device informer, bound as agents bind
 * them (`boundGroupId`: the device's `security_group_id`, else the first of
 * `ordered` whose `applies_to` holds one of its tags). `ordered` must be in
 * binding order, as useEnforcedGroups gives it.
 */
export function useGroupUsage(ordered: readonly BindableGroup[]): GroupUsage {
  const devices = useInformerItems('device');
  // Groups come in a new array each render; binding reads only their order, ids and tags.
  const key = ordered.map((g) => `${g.id}\u0000${(g.applies_to ?? []).join(',')}`).join('\n');
  const counts = useMemo(() => {
    const counts = new Map<string, number>();
    for (const d of devices.items) {
      const id = boundGroupId(d, ordered);
      if (id !== null) counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    return counts;
  }, [devices.items, key]);
  return { counts, synced: devices.synced };
}
