import { connect, type Socket } from 'node:net';
import { bearerAuthorization, HEADERS, MEDIA, paths } from '../../../src/protocol/index.js';
import { procTcpMemory } from '../../../src/server/streams/proc-tcp.js';
import { tcpConnection, type TcpConnection } from '../../../src/server/streams/tcp-connection.js';
import type { WatchTarget, WatchSpec } from './watch-client.js';

/**
 * Opens a watch stream on a raw socket and never reads it: the request is
 * written, then the socket is paused (node reads no further than its
 * readable buffer, so the rest backs up through TCP into the server), as a
 * client that opens streams and never reads from them does. Resolves once
 * the request was handed to the kernel.
 */
export function openStalled(target: WatchTarget, watches: readonly WatchSpec[]): Promise<Socket> {
  const u = new URL(target.url);
  const body = Buffer.from(JSON.stringify(watches), 'utf8');
  const head =
    `POST ${paths.events(target.org)} HTTP/1.1\r\n` +
    `host: ${u.host}\r\n` +
    `${HEADERS.contentType}: ${MEDIA.json}\r\n` +
    `content-length: ${body.length}\r\n` +
    (target.token !== undefined ? `${HEADERS.authorization}: ${bearerAuthorization(target.token)}\r\n` : '') +
    '\r\n';
  return new Promise((resolve, reject) => {
    const socket = connect({ host: u.hostname, port: Number(u.port) });
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.pause();
      socket.write(Buffer.concat([Buffer.from(head, 'latin1'), body]), (err) => {
        if (err) return reject(err);
        socket.off('error', reject);
        // Later errors (the server resetting it) must not crash the test process.
        socket.on('error', () => undefined);
        resolve(socket);
      });
    });
  });
}

/**
 * `n` stalled watch streams, kept at `n`: one the server closed is opened
 * again, as a persistent attacker would (closing them once is no defence).
 * A paused socket doesn't see the server's reset (node no longer polls it),
 * so `reap` looks for its connection in the kernel's table instead: a reset
 * connection is gone from it (twice in a row: a read of the table while
 * connections come and go may skip some). `stop` ends them all.
 */
export class StalledStreams {
  /** Streams opened in all, reopened ones included. */
  opened = 0;
  reopened = 0;
  /** Reopens that failed (the server refusing connections is what the test measures, not an error of the test). */
  reopenFailures = 0;
  private readonly open = new Set<Socket>();
  /** Sockets the last `reap` didn't find. */
  private missing = new Set<Socket>();
  private stopped = false;

  constructor(
    private readonly target: WatchTarget,
    private readonly watches: readonly WatchSpec[],
  ) {}

  get connected(): number {
    return this.open.size;
  }

  /** Opens `n` streams, `parallel` connects at a time (a listen backlog is finite). */
  async start(n: number, parallel = 50): Promise<void> {
    for (let i = 0; i < n && !this.stopped; i += parallel) {
      const batch = await Promise.allSettled(Array.from({ length: Math.min(parallel, n - i) }, () => this.openOne()));
      const failed = batch.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
    }
  }

  private async openOne(): Promise<void> {
    const socket = await openStalled(this.target, this.watches);
    this.opened++;
    if (this.stopped) {
      socket.destroy();
      return;
    }
    this.open.add(socket);
    socket.once('close', () => this.replace(socket));
  }

  private replace(socket: Socket): void {
    if (!this.open.delete(socket) || this.stopped) return;
    socket.destroy();
    this.reopened++;
    this.openOne().catch(() => {
      this.reopenFailures++;
    });
  }

  /** Replaces the streams whose connection the server reset; resolves with how many. */
  async reap(): Promise<number> {
    const connections = new Map<Socket, TcpConnection>();
    for (const s of this.open) {
      const c = tcpConnection(s);
      if (c !== undefined) connections.set(s, c);
    }
    const live = await procTcpMemory.sendQueues([...connections.values()]);
    const missing = new Set<Socket>();
    let dead = 0;
    for (const s of [...this.open]) {
      const key = connections.get(s);
      if (key === undefined || live.has(key)) continue;
      if (!this.missing.has(s)) {
        missing.add(s);
        continue;
      }
      dead++;
      this.replace(s);
    }
    this.missing = missing;
    return dead;
  }

  stop(): void {
    this.stopped = true;
    for (const s of this.open) s.destroy();
    this.open.clear();
  }
}
