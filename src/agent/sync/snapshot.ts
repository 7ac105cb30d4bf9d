/**
 * A consistent view of an organization at one revision: what a reconcile
 * computes the desired dataplane from.
 */
import { UnavailableError, type FleetplaneClient } from '../../client/index.js';
import type { DeviceObject, Organization, SecurityGroup } from '../../protocol/index.js';

/**
 * Everything of the organization as of `revision`: no change with a revision
 * at or below it is missing, none above it is included. `revision` is the
 * organization's head revision at that point, so an agent that applied this
 * snapshot is "at head" until the next change.
 */
export interface Snapshot {
  revision: number;
  organization: Organization;
  devices: readonly DeviceObject[];
  securityGroups: readonly SecurityGroup[];
  /** `watch`: the shared informers' caches; `relist`: a fresh listing over REST. */
  source: 'watch' | 'relist';
}

/** Attempts before a relist gives up on catching a quiet moment. */
const RELIST_ATTEMPTS = 5;

/**
 * Lists devices, security groups and the organization over REST and proves
 * they belong to one revision: both lists carry the same
 * `X-Fleetplane-Revision`, the organization is not newer, and a final
 * conditional list (`If-None-Match`) answers 304, so the head didn't move
 * while reading. Retries while writes keep landing in between; after
 * RELIST_ATTEMPTS it fails with UnavailableError. Transport and HTTP errors
 * are the SDK's.
 */
export async function relistSnapshot(client: FleetplaneClient, org: string, signal?: AbortSignal): Promise<Snapshot> {
  for (let attempt = 0; attempt < RELIST_ATTEMPTS; attempt++) {
    const devices = await client.devices.list(org, { signal });
    const groups = await client.securityGroups.list(org, { signal });
    const revision = devices.revision;
    if (revision === undefined || groups.revision === undefined) {
      throw new UnavailableError({ code: 'unavailable', message: 'the server sent a list without its revision header' });
    }
    if (groups.revision !== revision) continue;
    const organization = await client.organizations.get(org, { signal });
    if (organization.revision > revision) continue;
    const check = await client.devices.poll(org, revision, { signal });
    if (!check.notModified) continue;
    return { revision, organization, devices: devices.items, securityGroups: groups.items, source: 'relist' };
  }
  throw new UnavailableError({
    code: 'unavailable',
    message: `the organization kept changing while it was listed (${RELIST_ATTEMPTS} attempts); try again`,
  });
}
