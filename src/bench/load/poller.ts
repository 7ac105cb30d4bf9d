import http from 'node:http';
import type { Socket } from 'node:net';
import { HEADERS } from '../../protocol/index.js';
import { nowMs } from '../clock.js';
import { sleep } from '../../util/sleep.js';
import type { PollSpec } from './messages.js';

/** The outcome of one list request. */
export interface PollOutcome {
  status: number;
  bodyBytes: number;
  latencyMs: number;
}

/**
 * One polling client: its own keep-alive connection (one socket), listing
 * with `If-None-Match` when it has an ETag, the way a poller that follows
 * docs/protocol.md "Lists" does.
 */
export class Poller {
  private readonly agent: http.Agent;
  private etag: string | undefined;
  private readonly sockets = new Set<Socket>();

  constructor(
    private readonly spec: PollSpec,
    private readonly endpointIndex: number,
    private readonly localAddress: string,
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  }

  /** Bytes read by every socket this poller used. */
  get wireBytes(): number {
    let n = 0;
    for (const s of this.sockets) n += s.bytesRead;
    return n;
  }

  poll(timeoutMs: number): Promise<PollOutcome> {
    const endpoint = this.spec.endpoints[this.endpointIndex % this.spec.endpoints.length];
    if (!endpoint) return Promise.reject(new Error('no endpoint'));
    const headers: Record<string, string> = { ...this.spec.headers };
    if (this.spec.useEtag && this.etag !== undefined) headers[HEADERS.ifNoneMatch] = this.etag;
    const started = nowMs();
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: endpoint.host, port: endpoint.port, method: 'GET', path: this.spec.path, headers, agent: this.agent, localAddress: this.localAddress },
        (res) => {
          let bytes = 0;
          res.on('data', (c: Buffer) => {
            bytes += c.length;
          });
          res.on('end', () => {
            clearTimeout(timer);
            const etag = res.headers[HEADERS.etag];
            if (res.statusCode === 200 && typeof etag === 'string') this.etag = etag;
            resolve({ status: res.statusCode ?? 0, bodyBytes: bytes, latencyMs: nowMs() - started });
          });
          res.on('error', reject);
        },
      );
      const timer = setTimeout(() => req.destroy(new Error(`list timed out after ${timeoutMs} ms`)), timeoutMs);
      req.on('socket', (s: Socket) => {
        this.sockets.add(s);
      });
      req.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      req.end();
    });
  }

  /** Polls every `intervalMs` from `startAt` (fixed rate; a late poll starts at once) until `endAt`. */
  async run(startAt: number, endAt: number, intervalMs: number, onOutcome: (o: PollOutcome | Error) => void): Promise<void> {
    let next = startAt;
    for (;;) {
      // A poll due after the window is not made (and not waited for).
      if (next >= endAt) return;
      const wait = next - nowMs();
      if (wait > 0) await sleep(wait);
      try {
        onOutcome(await this.poll(Math.max(1000, endAt - nowMs() + 10_000)));
      } catch (err) {
        onOutcome(err instanceof Error ? err : new Error(String(err)));
      }
      next += intervalMs;
    }
  }

  close(): void {
    for (const s of this.sockets) s.resetAndDestroy();
    this.sockets.clear();
    this.agent.destroy();
  }
}
