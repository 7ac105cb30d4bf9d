import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { AGENT_METHOD_PATTERN, HEADERS, MEDIA, ROUTES, RPC_ANSWER_TIMEOUT_MS } from '../../protocol/index.js';
import { authorizePrivate } from '../access/index.js';
import { ApiError, validationFailed } from '../errors.js';
import type { ConnectionLimiter } from '../http/connection-limits.js';
import { bodyPending } from '../http/pending-body.js';
import { closesConnection } from '../http/connection-close.js';
import { findIllFormed } from '../http/well-formed.js';
import { rawErrorResponse } from '../http/raw-error-response.js';
import { agentError, type Delivery } from './delivery.js';
import type { GatewayMetrics } from './gateway-metrics.js';

export interface PrivateListenerOptions {
  host: string;
  port: number;
  /** Don't share the port with other cluster workers (each worker is a replica of its own). */
  exclusive: boolean;
  key: Uint8Array;
  bodyLimit: number;
  /** How long a body may take to arrive once it is read; past it: 408, and the connection closes. */
  bodyTimeoutMs: number;
  /** The server's connection limits; this listener counts in the total, not per source (its peers are the replicas). */
  connections: ConnectionLimiter;
  /** Delivers through this replica's own tunnels; never forwards, never waits. */
  deliver: (deviceId: string, method: string, params: Record<string, unknown>, answerMs: number, signal: AbortSignal) => Promise<Delivery>;
  /** True once the gateway shuts down: requests are then refused as not delivered. */
  closing: () => boolean;
  /**
   * Takes a WebSocket upgrade (another replica's relay link): true when it
   * handles the path, false to have it refused with 404. Read at each upgrade.
   */
  upgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;
  metrics: GatewayMetrics;
  logger: Logger;
}

const PATH = new RegExp(`^${ROUTES.privateAgentRpc.replace(':id', '([^/?]+)').replace(':method', '([^/?]+)')}(?:\\?.*)?$`);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const METHOD = new RegExp(AGENT_METHOD_PATTERN);

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  const headers: Record<string, string | number> = { [HEADERS.contentType]: MEDIA.json, [HEADERS.contentLength]: Buffer.byteLength(text) };
  // As on the public listener: no connection kept for a caller without a valid token, nor for reading
  // and discarding a body still on its way.
  if (closesConnection(status, res.req)) headers[HEADERS.connection] = 'close';
  res.writeHead(status, headers);
  res.end(text);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function readBody(req: IncomingMessage, limit: number, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // A body that arrived with its headers needs no timer (most do: one replica's request to another).
    const timer = bodyPending(req)
      ? setTimeout(() => {
          req.pause();
          reject(new ApiError('request_timeout', `the request body did not arrive within ${timeoutMs / 1000} s`));
        }, timeoutMs)
      : undefined;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        clearTimeout(timer);
        reject(new ApiError('payload_too_large', `the body exceeds ${limit} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/**
 * The replica-to-replica listener (`--private-port`): one route,
 * `POST /private/v1/agents/{device}/rpc/{method}` with a private token
 * (HS256, audience `fleetplane-private`; missing, forged, expired, too
 * long-lived or issued for another device/method: 401). It delivers only
 * through this replica's own tunnels and never forwards or waits: a device
 * with no tunnel here is 504 `agent_not_connected` at once, which the
 * routing replica takes as "try another". Answers: 200 `{"result": ...}`,
 * 502 `agent_error` (details: the agent's code and message), 503
 * `unavailable` (the tunnel went away mid-request: it may have run),
 * 429 when every tunnel is full. WebSocket upgrades go to `upgrade` (the
 * relay's links, `GET /private/v1/relay`); any it doesn't take is 404.
 */
export class PrivateListener {
  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(options: PrivateListenerOptions): Promise<PrivateListener> {
    const server = createServer((req, res) => {
      void handle(req, res, options).catch((err: unknown) => {
        options.logger.error({ err }, 'private request failed');
        send(res, 500, new ApiError('internal').toBody());
      });
    });
    server.keepAliveTimeout = 30_000;
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (options.upgrade?.(req, socket, head) === true) return;
      socket.on('error', () => undefined);
      socket.end(rawErrorResponse(new ApiError('not_found', `no WebSocket endpoint at ${(req.url ?? '').split('?')[0] ?? ''}`)));
    });
    options.connections.attach(server, { listener: 'private', perSource: false, logger: options.logger });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: options.host, port: options.port, exclusive: options.exclusive }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const port = (server.address() as AddressInfo).port;
    options.logger.info({ host: options.host, port }, 'private listener started');
    return new PrivateListener(server, port);
  }

  /** Stops accepting; waits for requests in flight (the gateway ends them first). */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeIdleConnections();
    });
  }
}

async function handle(req: IncomingMessage, res: ServerResponse, o: PrivateListenerOptions): Promise<void> {
  const status = await answer(req, res, o);
  o.metrics.privateRequests.inc({ status: String(status) });
}

async function answer(req: IncomingMessage, res: ServerResponse, o: PrivateListenerOptions): Promise<number> {
  const fail = (err: ApiError): number => {
    send(res, err.status, err.toBody());
    return err.status;
  };
  const m = PATH.exec(req.url ?? '');
  if (req.method !== 'POST' || !m) return fail(new ApiError('not_found', `no route ${req.method ?? ''} ${req.url ?? ''}`));
  let deviceId: string;
  let method: string;
  try {
    deviceId = decodeURIComponent(m[1] ?? '');
    method = decodeURIComponent(m[2] ?? '');
  } catch {
    return fail(new ApiError('bad_request', 'malformed path'));
  }
  if (!UUID.test(deviceId) || !METHOD.test(method)) return fail(new ApiError('validation_failed', 'bad device id or method name'));
  let deadlineMs: number;
  try {
    deadlineMs = Math.min((await authorizePrivate(req.headers, o.key, { deviceId, method })).deadlineMs, RPC_ANSWER_TIMEOUT_MS);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    o.logger.warn({ err: err.message, remote: req.socket.remoteAddress }, 'private request refused');
    return fail(err);
  }
  let params: unknown;
  try {
    const raw = await readBody(req, o.bodyLimit, o.bodyTimeoutMs);
    let text: string;
    try {
      text = utf8.decode(raw);
    } catch {
      return fail(new ApiError('bad_request', 'the body is not valid UTF-8'));
    }
    params = text.trim() === '' ? {} : JSON.parse(text);
  } catch (err) {
    if (err instanceof ApiError) return fail(err);
    return fail(new ApiError('bad_request', 'the body is not JSON'));
  }
  // The public listener's checks (json-body.ts): a body a routing replica passes on is not trusted more
  // than one it parsed itself, and U+FFFD must not stand in for bytes that were never text.
  const bad = findIllFormed(params);
  if (bad) return fail(validationFailed(bad.path || '/', bad.expected));
  if (typeof params !== 'object' || params === null || Array.isArray(params)) {
    return fail(new ApiError('validation_failed', 'the params must be a JSON object'));
  }
  if (o.closing()) return fail(new ApiError('agent_not_connected', 'this replica is shutting down'));
  const gone = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) gone.abort(new Error('the routing replica went away'));
  });
  let d: Delivery;
  try {
    d = await o.deliver(deviceId, method, params as Record<string, unknown>, deadlineMs, gone.signal);
  } catch (err) {
    if (gone.signal.aborted) return 499;
    if (err instanceof ApiError) return fail(err);
    throw err;
  }
  switch (d.kind) {
    case 'result':
      send(res, 200, { result: d.value });
      return 200;
    case 'agent_error':
      return fail(agentError(d.code, d.message));
    case 'not_delivered':
      // No second hop: the routing replica picks another holder.
      return fail(new ApiError('agent_not_connected', `no tunnel to this device on this replica (${d.reason})`));
    case 'lost':
      return fail(new ApiError('unavailable', d.reason));
  }
}
