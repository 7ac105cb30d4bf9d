import type { Network, Organization } from './schemas/organization.js';

/** An organization's policy document as it holds it (docs/protocol.md "Policy document"). */
export type OrganizationPolicy = NonNullable<Organization['policy']>;

/** The network of an organization created without one. */
export const DEFAULT_NETWORK: Network = { ipv4_cidr: '100.64.0.0/16', mtu: 1420, resolvers: [], routes: [], auto_approve_cidrs: [], auto_approvers: [] };
