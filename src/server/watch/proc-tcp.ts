import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { ipv6Groups } from '../../protocol/index.js';

/**
 * What Linux says about TCP memory, from /proc (everything is undefined or
 * empty elsewhere). Node can't bound a socket's kernel send buffer (no
 * SO_SNDBUF or TCP_NOTSENT_LOWAT for TCP), and the kernel grows it to
 * `tcp_wmem`'s maximum (4 MiB) for a peer that doesn't read: these figures
 * let the watch engine see what its streams hold there.
 */
export interface TcpMemorySource {
  /** Pages of TCP memory allocated now, all sockets of the host ("TCP: ... mem N" of /proc/net/sockstat). */
  pages(): number | undefined;
  /** The kernel's pressure threshold in pages (tcp_mem's middle value): past it, it shrinks buffers and may refuse. */
  pressurePages(): number | undefined;
  /** The most a socket's send buffer grows to by itself (tcp_wmem's maximum), in bytes. */
  sendBufferMax(): number | undefined;
  /** Bytes each connection of this network namespace has queued and not had acknowledged, by `connectionKey`. */
  sendQueues(): Promise<Map<string, number>>;
}

/** The byte size of a page, the unit of the kernel's TCP memory figures. */
export const PAGE_BYTES = 4096;

/** `::ffff:192.0.2.1` is 192.0.2.1; IPv6 in one uncompressed form. */
function canonicalAddress(address: string): string | undefined {
  const family = isIP(address);
  if (family === 4) return address;
  if (family !== 6) return undefined;
  const g = ipv6Groups(address.toLowerCase());
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) {
    const [hi = 0, lo = 0] = g.slice(6);
    return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  }
  return g.map((x) => x.toString(16)).join(':');
}

/** A connection's endpoints as node reports them (a `net.Socket`). */
export interface Endpoints {
  readonly localAddress?: string | undefined;
  readonly localPort?: number | undefined;
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
}

/** The key of a connection in `sendQueues`. */
export function connectionKey({ localAddress, localPort, remoteAddress, remotePort }: Endpoints): string | undefined {
  if (localAddress === undefined || remoteAddress === undefined || localPort === undefined || remotePort === undefined) return undefined;
  const local = canonicalAddress(localAddress);
  const remote = canonicalAddress(remoteAddress);
  if (local === undefined || remote === undefined) return undefined;
  // join, not a template: V8 keeps a concatenation as a tree of its pieces (32 bytes each) until the string is
  // read, and this one is kept for the watcher's lifetime.
  return [local, ':', localPort, '>', remote, ':', remotePort].join('');
}

/**
 * An address of /proc/net/tcp{,6}: 8 or 32 hex digits, each 32-bit word in
 * host byte order (little-endian on every platform node supports on Linux).
 */
function procAddress(hex: string): string | undefined {
  const bytes: number[] = [];
  for (let w = 0; w < hex.length; w += 8) {
    const word = parseInt(hex.slice(w, w + 8), 16);
    bytes.push(word & 0xff, (word >>> 8) & 0xff, (word >>> 16) & 0xff, word >>> 24);
  }
  if (bytes.length === 4) return bytes.join('.');
  if (bytes.length !== 16) return undefined;
  const groups = Array.from({ length: 8 }, (_, i) => (((bytes[2 * i] ?? 0) << 8) | (bytes[2 * i + 1] ?? 0)).toString(16));
  return canonicalAddress(groups.join(':'));
}

/** Parses /proc/net/tcp or tcp6 text into `into`: tx_queue by connection, listening sockets left out. */
export function parseProcNetTcp(text: string, into: Map<string, number>): void {
  for (const line of text.split('\n')) {
    // "  0: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 ..." — sl, local, remote, state, tx:rx.
    const f = line.trim().split(/\s+/, 5);
    const [, local, remote, state, queues] = f;
    if (!local || !remote || !state || !queues || state === '0A') continue;
    const [lAddr = '', lPort = ''] = local.split(':');
    const [rAddr = '', rPort = ''] = remote.split(':');
    const localAddress = procAddress(lAddr);
    const remoteAddress = procAddress(rAddr);
    const tx = parseInt(queues.split(':')[0] ?? '', 16);
    if (localAddress === undefined || remoteAddress === undefined || !Number.isFinite(tx)) continue;
    into.set(`${localAddress}:${parseInt(lPort, 16)}>${remoteAddress}:${parseInt(rPort, 16)}`, tx);
  }
}

function readNumbers(path: string): number[] | undefined {
  try {
    return readFileSync(path, 'utf8').trim().split(/\s+/).map(Number);
  } catch {
    return undefined;
  }
}

/** The figures of this host's /proc. */
export const procTcpMemory: TcpMemorySource = {
  pages() {
    try {
      const m = /^TCP:.*\smem (\d+)/m.exec(readFileSync('/proc/net/sockstat', 'utf8'));
      return m?.[1] === undefined ? undefined : Number(m[1]);
    } catch {
      return undefined;
    }
  },
  pressurePages() {
    const pressure = readNumbers('/proc/sys/net/ipv4/tcp_mem')?.[1];
    return pressure !== undefined && Number.isFinite(pressure) && pressure > 0 ? pressure : undefined;
  },
  sendBufferMax() {
    const max = readNumbers('/proc/sys/net/ipv4/tcp_wmem')?.[2];
    return max !== undefined && Number.isFinite(max) && max > 0 ? max : undefined;
  },
  async sendQueues() {
    const out = new Map<string, number>();
    for (const path of ['/proc/net/tcp', '/proc/net/tcp6']) {
      const text = await readFile(path, 'latin1').catch(() => undefined);
      if (text !== undefined) parseProcNetTcp(text, out);
    }
    return out;
  },
};
