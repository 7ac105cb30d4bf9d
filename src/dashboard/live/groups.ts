import { bindingOrder, type OrganizationPolicy, type PolicySecurityGroup } from '../../protocol/wire.js';
import type { SecurityGroup } from '../../client/index.js';
import { useInformerItems, useOrganization } from './hooks.js';

/** The security groups agents enforce for the organization, live (docs/protocol.md "Policy document"). */
export type EnforcedGroups =
  | {
      /** A policy document manages the organization: its groups, read-only here; the group objects are tombstoned. */
      source: 'policy';
      policy: OrganizationPolicy;
      groups: readonly PolicySecurityGroup[];
      synced: true;
    }
  | {
      /** The group objects (also while the organization is not yet listed: `synced` is false until it is). */
      source: 'objects';
      groups: readonly SecurityGroup[];
      synced: boolean;
    };

/** Either source's groups, in binding order (what `boundGroupId` takes). */
export function useEnforcedGroups(org: string): EnforcedGroups {
  const organization = useOrganization(org);
  const objects = useInformerItems('security-group');
  if (organization?.policy) return { source: 'policy', policy: organization.policy, groups: bindingOrder(organization.policy.groups), synced: true };
  return { source: 'objects', groups: bindingOrder(objects.items), synced: objects.synced && organization !== undefined };
}
