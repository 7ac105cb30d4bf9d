import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { HEADERS, MEDIA, ROUTES, bearerAuthorization, paths, watchLineHead } from '../protocol/index.js';
import { nowMs } from './clock.js';

/** One HTTP exchange as the harness saw it. */
export interface HttpResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** When the request was handed to the socket and when the response ended (nowMs()). */
  sentAt: number;
  doneAt: number;
}

/** A failed API call: the status and the server's error body. */
export class ApiCallError extends Error {
  override readonly name = 'ApiCallError';
  constructor(
    readonly status: number,
    readonly body: string,
    what: string,
  ) {
    super(`${what}: HTTP ${status}: ${body.slice(0, 300)}`);
  }
}

/** The fields of a device the benchmarks use. */
export interface BenchDevice {
  id: string;
  revision: number;
  /** The watch-event value: the device without `status` (docs/protocol.md "Device"). */
  value: Record<string, unknown>;
}

/**
 * A minimal REST client for the harness (keep-alive, bounded sockets). It is
 * deliberately not the SDK: the benchmark should measure the server, and
 * needs raw byte counts and send times.
 */
export class FleetApi {
  private readonly agent: http.Agent;
  private readonly url: URL;

  constructor(
    baseUrl: string,
    private readonly token: string,
    maxSockets = 32,
  ) {
    this.url = new URL(baseUrl);
    this.agent = new http.Agent({ keepAlive: true, maxSockets });
  }

  get host(): string {
    return this.url.hostname;
  }

  get port(): number {
    return Number(this.url.port);
  }

  request(method: string, path: string, body?: unknown, extraHeaders: Record<string, string> = {}): Promise<HttpResult> {
    return this.send(method, path, body === undefined ? undefined : { bytes: Buffer.from(JSON.stringify(body)), type: MEDIA.json }, extraHeaders);
  }

  /** A request whose body is `text` as `mediaType` (a policy document's YAML), not JSON. */
  requestText(method: string, path: string, text: string, mediaType: string, extraHeaders: Record<string, string> = {}): Promise<HttpResult> {
    return this.send(method, path, { bytes: Buffer.from(text, 'utf8'), type: mediaType }, extraHeaders);
  }

  private send(method: string, path: string, payload: { bytes: Buffer; type: string } | undefined, extraHeaders: Record<string, string>): Promise<HttpResult> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { [HEADERS.authorization]: bearerAuthorization(this.token), ...extraHeaders };
      if (payload) {
        headers[HEADERS.contentType] = payload.type;
        headers['content-length'] = String(payload.bytes.length);
      }
      const req = http.request({ host: this.url.hostname, port: this.url.port, method, path, headers, agent: this.agent }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts).toString('utf8'), sentAt, doneAt: nowMs() }),
        );
        res.on('error', reject);
      });
      req.on('error', reject);
      const sentAt = nowMs();
      req.end(payload?.bytes);
    });
  }

  private async json(method: string, path: string, body: unknown, what: string, ok = [200, 201]): Promise<{ value: Record<string, unknown>; res: HttpResult }> {
    const res = await this.request(method, path, body);
    if (!ok.includes(res.status)) throw new ApiCallError(res.status, res.body, what);
    return { value: JSON.parse(res.body) as Record<string, unknown>, res };
  }

  async createOrganization(name: string): Promise<string> {
    const { value } = await this.json('POST', ROUTES.organizations, { name }, 'create organization');
    return String(value['id']);
  }

  async createDevice(org: string, hostname: string): Promise<BenchDevice> {
    const { value } = await this.json('POST', paths.devices(org), { hostname, public_key: randomBytes(32).toString('base64') }, 'create device');
    return toDevice(value);
  }

  /** Creates an organization token with `role`; returns its secret (shown once). */
  async createOrgToken(org: string, role: 'admin' | 'read', description: string): Promise<string> {
    const { value } = await this.json('POST', paths.tokens(org), { role, description }, 'create organization token');
    const token = value['token'];
    if (typeof token !== 'string') throw new Error('create organization token: no token in the answer');
    return token;
  }

  /** PATCHes a device; `res.sentAt` is the benchmark's t0 for the change. */
  async patchDevice(org: string, id: string, patch: Record<string, unknown>): Promise<{ device: BenchDevice; res: HttpResult }> {
    const { value, res } = await this.json('PATCH', paths.device(org, id), patch, 'patch device');
    return { device: toDevice(value), res };
  }

  /** The organization's head revision, from a one-item list's `X-Fleetplane-Revision`. */
  async headRevision(org: string): Promise<number> {
    const res = await this.request('GET', `${paths.devices(org)}?limit=1`);
    const rev = res.headers[HEADERS.revision];
    if (res.status !== 200 || typeof rev !== 'string') throw new ApiCallError(res.status, res.body, 'list devices (head revision)');
    return Number(rev);
  }

  async metricsText(): Promise<string> {
    const res = await this.request('GET', ROUTES.metrics);
    if (res.status !== 200) throw new ApiCallError(res.status, res.body, 'metrics');
    return res.body;
  }

  close(): void {
    this.agent.destroy();
  }
}

function toDevice(value: Record<string, unknown>): BenchDevice {
  const { status: _status, device_token: _token, ...rest } = value;
  return { id: String(value['id']), revision: Number(value['revision']), value: rest };
}

/** Bytes of the watch line a change of this device produces (docs/protocol.md "Watch"), without chunk framing. */
export function changeLineBytes(device: BenchDevice): number {
  return Buffer.byteLength(`${watchLineHead('change', 'device')}${JSON.stringify(device.value)}}\n`);
}

/** Creates `count` devices with bounded concurrency; returns them in creation order. */
export async function createDevices(api: FleetApi, org: string, count: number, concurrency = 8, prefix = 'bench'): Promise<BenchDevice[]> {
  const out = new Array<BenchDevice>(count);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= count) return;
      out[i] = await api.createDevice(org, `${prefix}-${i}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return out;
}
