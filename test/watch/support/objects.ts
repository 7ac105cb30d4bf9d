import { paths, type Device, type DeviceObject, type SecurityGroup, type WatchEvent, type WatchKind } from '../../../src/protocol/index.js';
import { wgKey, type Harness } from '../../server/fixtures.js';

/** Spec of a device whose watch events are large (about 7 KB): many advertised CIDRs and endpoints. */
export function bigDeviceSpec(seed: number): Record<string, unknown> {
  const advertise_cidrs = Array.from({ length: 256 }, (_, i) => `10.${seed % 250}.${i}.0/24`);
  const endpoints = Array.from({ length: 32 }, (_, i) => ({ source: 'manual', address: `192.0.2.${1 + (i % 250)}:${10000 + seed}` }));
  return { hostname: `big-${seed}`, public_key: wgKey(), advertise_cidrs, endpoints };
}

/**
 * Spec of a security group whose watch events are about 300 KB: 2 × 200 rules
 * of 48 ranges. A few dozen of them fill loopback socket buffers (several MB).
 */
export function bigGroupSpec(seed: number): Record<string, unknown> {
  const rule = (r: number) => ({
    ip_protocol: 'tcp',
    from_port: r,
    to_port: r,
    ip_ranges: Array.from({ length: 48 }, (_, i) => `10.${seed % 250}.${i}.${r % 250}/32`),
  });
  const rules = Array.from({ length: 200 }, (_, r) => rule(r));
  return { description: `big-${seed}`, inbound_rules: rules, outbound_rules: rules };
}

export async function deleteDevice(h: Harness, org: string, id: string): Promise<void> {
  await h.ok(204, 'DELETE', paths.device(org, id));
}

/** PATCHes a device; returns it as watch events carry it (without `status`). */
export async function patchDevice(h: Harness, org: string, id: string, body: Record<string, unknown>): Promise<DeviceObject> {
  const { status: _status, ...device } = await h.ok<Device>(200, 'PATCH', paths.device(org, id), { body });
  return device;
}

export async function deleteGroup(h: Harness, org: string, id: string): Promise<void> {
  await h.ok(204, 'DELETE', paths.securityGroup(org, id));
}

export async function patchGroup(h: Harness, org: string, id: string, body: Record<string, unknown>): Promise<SecurityGroup> {
  return h.ok<SecurityGroup>(200, 'PATCH', paths.securityGroup(org, id), { body });
}

/** Change and delete events only, as `kind type id` strings. */
export function summary(events: readonly WatchEvent[]): string[] {
  return events.flatMap((e) => (e.type === 'change' || e.type === 'delete' ? [`${e.kind} ${e.type} ${e.value.id}`] : []));
}

export function ofType<T extends WatchEvent['type']>(events: readonly WatchEvent[], type: T): Extract<WatchEvent, { type: T }>[] {
  return events.filter((e): e is Extract<WatchEvent, { type: T }> => e.type === type);
}

export function ofKind(events: readonly WatchEvent[], kind: WatchKind): WatchEvent[] {
  return events.filter((e) => 'kind' in e && e.kind === kind);
}

/** Highest revision an event proves the stream reached (0 for errors). */
export function revisionOf(e: WatchEvent): number {
  return e.type === 'error' ? 0 : e.value.revision;
}
