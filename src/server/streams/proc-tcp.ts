import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { ConnectionIndex, scanProcNetTcpFile } from './proc-tcp-scan.js';
import type { TcpConnection } from './tcp-connection.js';

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
  /** Bytes each of `connections` has queued and not had acknowledged; a connection the kernel doesn't list is left out. */
  sendQueues(connections: readonly TcpConnection[]): Promise<Map<TcpConnection, number>>;
}

/** The byte size of a page, the unit of the kernel's TCP memory figures. */
export const PAGE_BYTES = 4096;

function readNumbers(path: string): number[] | undefined {
  try {
    return readFileSync(path, 'utf8').trim().split(/\s+/).map(Number);
  } catch {
    return undefined;
  }
}

/**
 * /proc/net/sockstat, kept open: the kernel guard reads it every few
 * milliseconds while a fan-out writes, and a positioned read of an open file
 * costs a fifth of an open, read and close (bench `fanout`).
 */
let sockstatFd: number | undefined;
const sockstatBuffer = Buffer.alloc(4096);

function readSockstat(): string {
  sockstatFd ??= openSync('/proc/net/sockstat', 'r');
  try {
    // The kernel writes the whole file afresh for each read from offset 0.
    return sockstatBuffer.toString('latin1', 0, readSync(sockstatFd, sockstatBuffer, 0, sockstatBuffer.length, 0));
  } catch (err) {
    const fd = sockstatFd;
    sockstatFd = undefined;
    // Opened afresh on the next read; a close that fails leaves nothing to undo.
    try {
      closeSync(fd);
    } catch {
      /* the read's error is the one to report */
    }
    throw err;
  }
}

/** The figures of this host's /proc. */
export const procTcpMemory: TcpMemorySource = {
  pages() {
    try {
      const m = /^TCP:.*\smem (\d+)/m.exec(readSockstat());
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
  async sendQueues(connections) {
    const out = new Map<TcpConnection, number>();
    if (connections.length === 0) return out;
    const index = new ConnectionIndex(connections);
    for (const path of ['/proc/net/tcp', '/proc/net/tcp6']) {
      try {
        await scanProcNetTcpFile(path, index, out);
      } catch (err) {
        // No IPv6 (or no /proc): that file's connections are simply not there.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    return out;
  },
};
