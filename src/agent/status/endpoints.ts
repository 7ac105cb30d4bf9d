/**
 * Where peers can reach this device: the `--endpoint` values it is given, or
 * else its interface addresses with its WireGuard listen port; and beside
 * either, the public mapping of that port that STUN found.
 */
import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';
import type { Endpoint } from '../../protocol/index.js';
import type { StunState } from '../nat/stun-state.js';

/** docs/protocol.md allows 32 endpoints on a device; status `local_endpoints` 64. */
export const MAX_ENDPOINTS = 32;

export type InterfaceTable = NodeJS.Dict<NetworkInterfaceInfo[]>;

function usable(info: NetworkInterfaceInfo): boolean {
  if (info.internal) return false;
  // Link-local addresses need a scope a peer can't know; 169.254/16 is not routed.
  if (info.family === 'IPv6') return !/^fe[89ab]/i.test(info.address);
  return !info.address.startsWith('169.254.');
}

/**
 * `ip:port` / `[v6]:port` of every usable address of the machine (not
 * loopback, not link-local, not on `excludeInterface`, the tunnel itself),
 * IPv4 first, sorted, at most MAX_ENDPOINTS.
 */
export function interfaceEndpoints(listenPort: number, excludeInterface: string, table: InterfaceTable = networkInterfaces()): string[] {
  const v4 = new Set<string>();
  const v6 = new Set<string>();
  for (const [name, infos] of Object.entries(table)) {
    if (name === excludeInterface || !infos) continue;
    for (const info of infos) {
      if (!usable(info)) continue;
      if (info.family === 'IPv4') v4.add(`${info.address}:${listenPort}`);
      else v6.add(`[${info.address}]:${listenPort}`);
    }
  }
  return [...[...v4].sort(), ...[...v6].sort()].slice(0, MAX_ENDPOINTS);
}

/**
 * What the device publishes: the manual endpoints when given, else the
 * discovered local ones, and the `stun` endpoints after the manual ones and
 * before the local ones (peers choose by source, not by position; the order
 * only decides what a list longer than MAX_ENDPOINTS loses: local ones first).
 */
export function publishedEndpoints(manual: readonly string[], local: readonly string[], stun: readonly string[] = []): Endpoint[] {
  const mine: Endpoint[] = manual.length > 0 ? manual.map((address) => ({ source: 'manual', address })) : [];
  const found: Endpoint[] = stun.map((address) => ({ source: 'stun', address }));
  const rest: Endpoint[] = manual.length > 0 ? [] : local.map((address) => ({ source: 'local', address }));
  return [...mine, ...found, ...rest].slice(0, MAX_ENDPOINTS);
}

/** A device's spec fields the agent publishes itself. */
export interface PublishedSpec {
  endpoints: Endpoint[];
  symmetric_nat: boolean;
}

/**
 * What the device should publish, given its manual endpoints, its local
 * ones, what STUN knows, and `base` (what the server holds as far as the
 * agent knows; undefined when it knows nothing):
 * - `mapped`: the mapping as a `stun` endpoint, and `symmetric_nat` from it;
 * - `off`: no `stun` endpoint, `symmetric_nat` false (STUN is off, or the
 *   mapping was lost);
 * - `pending`: `base`'s `stun` endpoints and `symmetric_nat` unchanged (the
 *   first probe has not finished: a restart doesn't drop and re-add them).
 */
export function wantedSpec(manual: readonly string[], local: readonly string[], stun: StunState, base: PublishedSpec | undefined): PublishedSpec {
  if (stun.kind === 'mapped') return { endpoints: publishedEndpoints(manual, local, [stun.endpoint]), symmetric_nat: stun.symmetric };
  if (stun.kind === 'off' || !base) return { endpoints: publishedEndpoints(manual, local), symmetric_nat: false };
  const kept = base.endpoints.filter((e) => e.source === 'stun').map((e) => e.address);
  return { endpoints: publishedEndpoints(manual, local, kept), symmetric_nat: base.symmetric_nat };
}

function key(e: Endpoint): string {
  return `${e.source} ${e.address}`;
}

/** Same set of endpoints, in any order. */
export function sameEndpoints(a: readonly Endpoint[], b: readonly Endpoint[]): boolean {
  if (a.length !== b.length) return false;
  const left = a.map(key).sort();
  const right = b.map(key).sort();
  return left.every((k, i) => k === right[i]);
}
