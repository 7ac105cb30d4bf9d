import http from 'node:http';
import { HEADERS, MEDIA, bearerAuthorization, paths, type DevicePatch, type DeviceStatusInput } from '../../protocol/index.js';
import { nowMs } from '../clock.js';
import { changeLineBytes } from '../http-api.js';
import { COUNTER, bump, type AgentCounters } from './agent-counters.js';
import type { PatchOutcome } from './agent-messages.js';
import { retryAfterMs } from './retry-wait.js';

/** How one `PUT .../status` ended. */
export type PutOutcome = { ok: true } | { ok: false; retryAfter: number | undefined };

const TIMEOUT_MS = 30_000;

/**
 * `PUT /api/organizations/{org}/devices/{id}/status` (and the agent's
 * `PATCH` of its own device) for the agents of one load worker, with each
 * device's token, over one keep-alive pool of `connections` sockets from one
 * loopback source address. (A real agent has its own connection; pooling
 * keeps the bench inside the per-process file limit, next to the agents' 2
 * sockets each. The server's work per request is the same.)
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

  /**
   * `PATCH .../devices/{id}` with the device's own token, as the agent's
   * endpoint publisher sends it; never rejects. Times are nowMs() of this
   * process: handed to the pool, and the answer's end.
   */
  patchDevice(org: string, deviceId: string, token: string, patch: DevicePatch): Promise<Omit<PatchOutcome, 'agent'>> {
    const body = Buffer.from(JSON.stringify(patch));
    bump(this.counters, COUNTER.patchesSent);
    const sentAt = nowMs();
    return new Promise((resolve) => {
      const failed = (status: number, error: string): void => resolve({ status, revision: Number.NaN, lineBytes: Number.NaN, sentAt, doneAt: nowMs(), error });
      const req = http.request(
        {
          host: this.host,
          port: this.port,
          method: 'PATCH',
          path: paths.device(org, deviceId),
          agent: this.agent,
          localAddress: this.localAddress,
          headers: { [HEADERS.authorization]: bearerAuthorization(token), [HEADERS.contentType]: MEDIA.json, 'content-length': String(body.length) },
          timeout: TIMEOUT_MS,
        },
        (res) => {
          const parts: Buffer[] = [];
          res.on('data', (c: Buffer) => parts.push(c));
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            const text = Buffer.concat(parts).toString('utf8');
            if (status !== 200) {
              bump(this.counters, COUNTER.http('patch', status));
              return failed(status, text.slice(0, 200));
            }
            bump(this.counters, COUNTER.patchesOk);
            const { status: _status, ...value } = JSON.parse(text) as Record<string, unknown>;
            const revision = Number(value['revision']);
            resolve({ status, revision, lineBytes: changeLineBytes({ id: deviceId, revision, value }), sentAt, doneAt: nowMs() });
          });
          res.on('error', (err) => failed(res.statusCode ?? 0, err.message));
        },
      );
      req.on('timeout', () => req.destroy(Object.assign(new Error('PATCH timed out'), { code: 'timeout' })));
      req.on('error', (err: NodeJS.ErrnoException) => {
        bump(this.counters, COUNTER.connectError('patch', err.code ?? 'error'));
        failed(0, err.message);
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
