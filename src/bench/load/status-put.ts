import http from 'node:http';
import { HEADERS, MEDIA, bearerAuthorization, paths, type DeviceStatusInput } from '../../protocol/index.js';
import { COUNTER, bump, type AgentCounters } from './agent-counters.js';
import { retryAfterMs } from './retry-wait.js';

/** How one `PUT .../status` ended. */
export type PutOutcome = { ok: true } | { ok: false; retryAfter: number | undefined };

const TIMEOUT_MS = 30_000;

/**
 * `PUT /api/organizations/{org}/devices/{id}/status` for the agents of one
 * load worker, with each device's token, over one keep-alive pool of
 * `connections` sockets from one loopback source address. (A real agent has
 * its own connection; pooling keeps the bench inside the per-process file
 * limit, next to the agents' 2 sockets each. The server's work per PUT is
 * the same.)
 */
export class StatusPutSender {
  private readonly agent: http.Agent;

  constructor(
    private readonly host: string,
    private readonly port: number,
    connections: number,
    private readonly localAddress: string,
    private readonly counters: AgentCounters,
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  }

  put(org: string, deviceId: string, token: string, status: DeviceStatusInput): Promise<PutOutcome> {
    const body = Buffer.from(JSON.stringify(status));
    bump(this.counters, COUNTER.putsSent);
    return new Promise((resolve) => {
      const req = http.request(
        {
          host: this.host,
          port: this.port,
          method: 'PUT',
          path: paths.deviceStatus(org, deviceId),
          agent: this.agent,
          localAddress: this.localAddress,
          headers: { [HEADERS.authorization]: bearerAuthorization(token), [HEADERS.contentType]: MEDIA.json, 'content-length': String(body.length) },
          timeout: TIMEOUT_MS,
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            if (status === 200) {
              bump(this.counters, COUNTER.putsOk);
              return resolve({ ok: true });
            }
            bump(this.counters, COUNTER.http('put', status));
            resolve({ ok: false, retryAfter: status === 503 || status === 429 ? retryAfterMs(res.headers[HEADERS.retryAfter]) : undefined });
          });
          res.on('error', () => resolve({ ok: false, retryAfter: undefined }));
        },
      );
      req.on('timeout', () => req.destroy(Object.assign(new Error('PUT timed out'), { code: 'timeout' })));
      req.on('error', (err: NodeJS.ErrnoException) => {
        bump(this.counters, COUNTER.connectError('put', err.code ?? 'error'));
        resolve({ ok: false, retryAfter: undefined });
      });
      req.end(body);
    });
  }

  /** Closes the pool's sockets with a reset. */
  close(): void {
    for (const list of [Object.values(this.agent.sockets), Object.values(this.agent.freeSockets)]) {
      for (const sockets of list) for (const s of sockets ?? []) s.resetAndDestroy();
    }
    this.agent.destroy();
  }
}
