import { isIP } from 'node:net';
import { ipv6Groups, parseIpv4 } from '../../protocol/index.js';

/** An address as four 32-bit words in network order, each as a signed integer (so it stays a small integer in V8). */
export type AddressWords = readonly [number, number, number, number];

/**
 * A TCP connection's endpoints as numbers, so the lines of /proc/net/tcp can
 * be matched to it without making a string per line. IPv4 addresses are in
 * their IPv4-mapped IPv6 form, as /proc/net/tcp6 shows them for a dual-stack
 * socket: the same connection matches in either file.
 */
export interface TcpConnection {
  readonly local: AddressWords;
  readonly localPort: number;
  readonly remote: AddressWords;
  readonly remotePort: number;
}

/** A connection's endpoints as node reports them (a `net.Socket`). */
export interface Endpoints {
  readonly localAddress?: string | undefined;
  readonly localPort?: number | undefined;
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
}

/** The third word of an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`); the first two are 0. */
export const IPV4_MAPPED = 0xffff;

function addressWords(address: string): AddressWords | undefined {
  const family = isIP(address);
  if (family === 4) {
    const v4 = parseIpv4(address);
    return v4 === undefined ? undefined : [0, 0, IPV4_MAPPED, v4 | 0];
  }
  if (family !== 6) return undefined;
  const g = ipv6Groups(address.toLowerCase());
  const word = (i: number): number => ((g[2 * i] ?? 0) << 16) | (g[2 * i + 1] ?? 0);
  return [word(0), word(1), word(2), word(3)];
}

/** The connection of a socket; undefined while it is not connected (no endpoints yet) or for an address that isn't IP. */
export function tcpConnection({ localAddress, localPort, remoteAddress, remotePort }: Endpoints): TcpConnection | undefined {
  if (localAddress === undefined || remoteAddress === undefined || localPort === undefined || remotePort === undefined) return undefined;
  const local = addressWords(localAddress);
  const remote = addressWords(remoteAddress);
  if (local === undefined || remote === undefined) return undefined;
  return { local, localPort, remote, remotePort };
}

/** Whether two connections have the same endpoints. */
export function sameConnection(a: TcpConnection, b: TcpConnection): boolean {
  return (
    a.localPort === b.localPort &&
    a.remotePort === b.remotePort &&
    a.remote[3] === b.remote[3] &&
    a.remote[2] === b.remote[2] &&
    a.remote[1] === b.remote[1] &&
    a.remote[0] === b.remote[0] &&
    a.local[3] === b.local[3] &&
    a.local[2] === b.local[2] &&
    a.local[1] === b.local[1] &&
    a.local[0] === b.local[0]
  );
}

/** A number that is the same for the same remote endpoint (exact for IPv4): connections are looked up by it, then compared. */
export function remoteKey(remoteLast: number, remotePort: number): number {
  return (remoteLast >>> 0) * 65536 + remotePort;
}
