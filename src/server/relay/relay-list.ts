import type { RelayEntry, RelayList } from '../../protocol/index.js';
import type { ReplicaInfo } from '../replicas/index.js';

/** The relay list (docs/protocol.md "Relays") from the live replicas: those whose relay is on, oldest first, as `listReplicas` orders them. */
export function relayListOf(replicas: readonly ReplicaInfo[]): RelayList {
  const items: RelayEntry[] = [];
  for (const r of replicas) {
    if (r.relay) items.push({ id: r.id, url: r.relayUrl, expires_at: r.leaseExpiresAt.toISOString() });
  }
  return { items };
}

/**
 * What makes two lists different to a follower: the replicas and their
 * URLs, not their leases, which every renewal moves (a line per replica and
 * renewal would say nothing new). Leases go out with every line sent.
 */
export function relayListShape(list: RelayList): string {
  return JSON.stringify(list.items.map((e) => [e.id, e.url]));
}

/** The earliest lease of the list (ms since the epoch), or undefined for an empty list: when it next changes by itself. */
export function earliestExpiry(list: RelayList): number | undefined {
  let earliest: number | undefined;
  for (const e of list.items) {
    const at = Date.parse(e.expires_at);
    if (earliest === undefined || at < earliest) earliest = at;
  }
  return earliest;
}
