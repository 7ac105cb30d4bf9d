import type { DeviceObject, Network, Organization, Rule, SecurityGroup } from '../../../src/protocol/index.js';
import { computeDesiredState, publicKeyFromPrivate, type DesiredDataplane, type DesiredStateInput, type WireGuardKeyPair } from '../../../src/agent/dataplane/index.js';

export const ORG_ID = '0a000000-0000-4000-8000-000000000000';
const T0 = '2026-01-01T00:00:00.000Z';

/** A fixed key pair per n, so golden files are stable. */
export function keyPair(n: number): WireGuardKeyPair {
  const raw = Buffer.alloc(32, n);
  raw[0] = (raw[0] ?? 0) & 248;
  raw[31] = ((raw[31] ?? 0) & 127) | 64;
  const privateKey = raw.toString('base64');
  return { privateKey, publicKey: publicKeyFromPrivate(privateKey) };
}

export function deviceId(n: number): string {
  return `0d000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
}

export function groupId(n: number): string {
  return `05000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
}

export function organization(network: Partial<Network> = {}): Organization {
  return {
    id: ORG_ID,
    name: 'acme',
    description: '',
    network: { ipv4_cidr: '100.64.0.0/16', mtu: 1420, resolvers: [], routes: [], auto_approve_cidrs: [], auto_approvers: [], ...network },
    audit_readable_by_read: false,
    tag_owners: {},
    revision: 1,
    created_at: T0,
    updated_at: T0,
  };
}

/** A device; its advertised routes are approved unless `approved_cidrs` says otherwise. */
export function device(n: number, overrides: Partial<DeviceObject> = {}): DeviceObject {
  return {
    id: deviceId(n),
    organization_id: ORG_ID,
    hostname: `host-${n}`,
    public_key: keyPair(n).publicKey,
    advertise_cidrs: [],
    approved_cidrs: overrides.approved_cidrs ?? overrides.advertise_cidrs ?? [],
    endpoints: [],
    relay: false,
    symmetric_nat: false,
    security_group_id: null,
    tags: [],
    tunnel_ip: `100.64.0.${n}`,
    ephemeral: false,
    revision: n,
    created_at: T0,
    updated_at: T0,
    ...overrides,
  };
}

export function rule(ip_protocol: Rule['ip_protocol'], from_port: number, to_port: number, ip_ranges: string[]): Rule {
  return { ip_protocol, from_port, to_port, ip_ranges };
}

export function securityGroup(n: number, inbound: Rule[], outbound: Rule[] = []): SecurityGroup {
  return {
    id: groupId(n),
    organization_id: ORG_ID,
    name: null,
    description: `group ${n}`,
    inbound_rules: inbound,
    outbound_rules: outbound,
    revision: 100 + n,
    created_at: T0,
    updated_at: T0,
  };
}

/**
 * Device `n`'s desired state on interface `fp0`, listening on 51820 unless
 * `input` says otherwise; the organization is `organization()` and there are
 * no groups unless given.
 */
export function desiredStateOf(n: number, input: Partial<Omit<DesiredStateInput, 'deviceId' | 'privateKey'>> & Pick<DesiredStateInput, 'devices'>): DesiredDataplane {
  return computeDesiredState({
    deviceId: deviceId(n),
    interfaceName: 'fp0',
    privateKey: keyPair(n).privateKey,
    listenPort: 51820,
    organization: organization(),
    securityGroups: [],
    ...input,
  });
}
