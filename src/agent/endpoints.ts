/**
 * Where peers can reach this device: the `--endpoint` values it is given, or
 * else its interface addresses with its WireGuard listen port.
 */
import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';
import type { Endpoint } from '../protocol/index.js';

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

/** What the device publishes: the manual endpoints when given, else the discovered local ones. */
export function publishedEndpoints(manual: readonly string[], local: readonly string[]): Endpoint[] {
  if (manual.length > 0) return manual.slice(0, MAX_ENDPOINTS).map((address) => ({ source: 'manual', address }));
  return local.slice(0, MAX_ENDPOINTS).map((address) => ({ source: 'local', address }));
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
