import { open } from 'node:fs/promises';
import { IPV4_MAPPED, remoteKey, sameConnection, type TcpConnection } from './tcp-connection.js';

/**
 * Connections to look for in /proc/net/tcp, by `remoteKey`: a host with
 * 10,000 agents has 40,000 lines there (6 MB), and the guard reads it while a
 * herd joins, so a line is parsed from the bytes and looked up by numbers;
 * only the lines of wanted connections cost anything beyond the read.
 */
export class ConnectionIndex {
  readonly #byRemote = new Map<number, TcpConnection | TcpConnection[]>();

  constructor(connections: Iterable<TcpConnection>) {
    for (const c of connections) {
      const key = remoteKey(c.remote[3], c.remotePort);
      const held = this.#byRemote.get(key);
      if (held === undefined) this.#byRemote.set(key, c);
      else if (Array.isArray(held)) held.push(c);
      else this.#byRemote.set(key, [held, c]);
    }
  }

  /** The wanted connection with these endpoints, if any. */
  find(line: TcpConnection): TcpConnection | undefined {
    const held = this.#byRemote.get(remoteKey(line.remote[3], line.remotePort));
    if (held === undefined) return undefined;
    if (!Array.isArray(held)) return sameConnection(held, line) ? held : undefined;
    return held.find((c) => sameConnection(c, line));
  }
}

/** Bytes read from /proc at a time; a line is about 150 bytes (tcp) or 180 (tcp6). */
const READ_BYTES = 256 * 1024;
const NEWLINE = 0x0a;
const SPACE = 0x20;
const COLON = 0x3a;

/** Endpoints of the line being parsed: one object per scan, overwritten per line. */
interface Scratch {
  local: [number, number, number, number];
  localPort: number;
  remote: [number, number, number, number];
  remotePort: number;
  at: number;
}

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  return -1;
}

/** A hex number from `s.at` up to the first non-hex byte (at most 8 digits); -1 when there is none. */
function hex(buf: Buffer, s: Scratch, end: number): number {
  let n = 0;
  const start = s.at;
  for (; s.at < end && s.at - start < 8; s.at++) {
    const d = hexDigit(buf[s.at] ?? 0);
    if (d < 0) break;
    n = n * 16 + d;
  }
  return s.at === start ? -1 : n;
}

/** /proc prints each 32-bit word of an address as the host (little-endian) reads it: swapped to network order. */
function swapped(word: number): number {
  return ((word & 0xff) << 24) | (((word >>> 8) & 0xff) << 16) | (((word >>> 16) & 0xff) << 8) | (word >>> 24);
}

/** `ADDRESS:PORT` (8 or 32 hex digits of address) into `words` and the returned port; -1 when malformed. */
function endpoint(buf: Buffer, s: Scratch, end: number, words: [number, number, number, number]): number {
  let count = 0;
  while (count < 4 && s.at < end && buf[s.at] !== COLON) {
    const from = s.at;
    const word = hex(buf, s, end);
    if (word < 0 || s.at - from !== 8) return -1;
    words[count++] = swapped(word);
  }
  if (buf[s.at] !== COLON || (count !== 1 && count !== 4)) return -1;
  if (count === 1) {
    // IPv4, as its IPv4-mapped IPv6 form (TcpConnection's).
    words[3] = words[0];
    words[0] = 0;
    words[1] = 0;
    words[2] = IPV4_MAPPED;
  }
  s.at++;
  return hex(buf, s, end);
}

function skipSpaces(buf: Buffer, s: Scratch, end: number): void {
  while (s.at < end && buf[s.at] === SPACE) s.at++;
}

/**
 * One line (`  sl: local remote st tx_queue:rx_queue ...`): its send queue
 * into `into` when it is a wanted connection. The header and anything
 * malformed are skipped.
 */
function scanLine(buf: Buffer, start: number, end: number, index: ConnectionIndex, s: Scratch, into: Map<TcpConnection, number>): void {
  s.at = start;
  skipSpaces(buf, s, end);
  if (hex(buf, s, end) < 0 || buf[s.at] !== COLON) return;
  s.at++;
  skipSpaces(buf, s, end);
  s.localPort = endpoint(buf, s, end, s.local);
  if (s.localPort < 0 || buf[s.at] !== SPACE) return;
  skipSpaces(buf, s, end);
  s.remotePort = endpoint(buf, s, end, s.remote);
  if (s.remotePort < 0) return;
  const wanted = index.find(s);
  if (wanted === undefined) return;
  skipSpaces(buf, s, end);
  if (hex(buf, s, end) < 0) return;
  skipSpaces(buf, s, end);
  const tx = hex(buf, s, end);
  if (tx >= 0 && buf[s.at] === COLON) into.set(wanted, tx);
}

/** Scans /proc/net/tcp-formatted bytes (complete lines) for the wanted connections. */
export function scanProcNetTcp(bytes: Buffer, index: ConnectionIndex, into: Map<TcpConnection, number>): void {
  const s = scratch();
  let start = 0;
  while (start < bytes.length) {
    let nl = bytes.indexOf(NEWLINE, start);
    if (nl < 0) nl = bytes.length;
    scanLine(bytes, start, nl, index, s, into);
    start = nl + 1;
  }
}

function scratch(): Scratch {
  return { local: [0, 0, 0, 0], localPort: 0, remote: [0, 0, 0, 0], remotePort: 0, at: 0 };
}

/** Reads a /proc/net/tcp file in pieces, scanning each: what it holds is one read buffer, whatever the number of connections. */
export async function scanProcNetTcpFile(path: string, index: ConnectionIndex, into: Map<TcpConnection, number>): Promise<void> {
  const file = await open(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(READ_BYTES);
    let kept = 0;
    for (;;) {
      const { bytesRead } = await file.read(buf, kept, buf.length - kept, null);
      const filled = kept + bytesRead;
      const lastNewline = bytesRead === 0 ? filled - 1 : buf.lastIndexOf(NEWLINE, filled - 1);
      if (lastNewline >= 0) scanProcNetTcp(buf.subarray(0, lastNewline + 1), index, into);
      if (bytesRead === 0) return;
      // A line cut by the read is kept for the next one; a line longer than the buffer can't be one of /proc's.
      kept = lastNewline < 0 ? 0 : filled - lastNewline - 1;
      if (kept > 0) buf.copy(buf, 0, lastNewline + 1, filled);
    }
  } finally {
    await file.close();
  }
}
