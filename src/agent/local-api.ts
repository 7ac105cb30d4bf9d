/**
 * The agent's HTTP API on 127.0.0.1 (routes in src/protocol/agent-local.ts):
 * `POST /force-sync` and `GET /status`, and the address file in the state
 * directory that tells its clients the port.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { AGENT_LOCAL_HOST, AGENT_LOCAL_ROUTES, ERRORS, HEADERS, MEDIA, RPC_ANSWER_TIMEOUT_MS, type ErrorCode } from '../protocol/index.js';
import { errorMessage } from './errors.js';
import { StateDirError } from './identity/state-dir.js';
import { localApiAddressPath, removeLocalApiAddress, writeLocalApiAddress } from './local-api-address.js';
import { ForceSyncError, type ForceSyncResult } from './sync/force-sync.js';

export interface LocalApiHandlers {
  status(signal: AbortSignal): Promise<unknown>;
  forceSync(signal: AbortSignal): Promise<ForceSyncResult>;
}

export interface LocalApiOptions {
  /** 0 picks a free port. */
  port: number;
  /** The state directory, where the address file says which port it is while the API listens. */
  stateDir: string;
  handlers: LocalApiHandlers;
  logger: Logger;
  /** Bound of one force-sync. Default RPC_ANSWER_TIMEOUT_MS. */
  forceSyncTimeoutMs?: number;
  /** Force-syncs running at once; more are refused with 429. Default 4. */
  maxConcurrent?: number;
}

const HOST = AGENT_LOCAL_HOST;
const LOOPBACK_HOSTS = new Set([HOST, 'localhost', '[::1]']);

/** Listening on a port that is taken, or not allowed. */
export class LocalApiListenError extends Error {
  override readonly name = 'LocalApiListenError';
}

/** Thrown by a handler that can't answer yet (the agent is still enrolling): 503 `unavailable`. */
export class LocalApiNotReadyError extends Error {
  override readonly name = 'LocalApiNotReadyError';
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { [HEADERS.contentType]: MEDIA.json, 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  res.end(text);
}

function sendError(res: ServerResponse, code: ErrorCode, message: string): void {
  send(res, ERRORS[code].status, { error: { code, message } });
}

function forceSyncFailure(err: unknown): { code: ErrorCode; message: string } {
  if (err instanceof ForceSyncError) {
    return { code: err.code === 'apply_failed' ? 'internal' : 'unavailable', message: err.message };
  }
  return { code: 'internal', message: errorMessage(err) };
}

/**
 * Loopback only, and only for requests addressed to a loopback name (a web
 * page can't reach it through DNS rebinding). Force-syncs are bounded in
 * time and number; a caller that disconnects cancels its force-sync.
 * `start` resolves once it listens and the address file is written; it
 * throws LocalApiListenError when it can't listen, StateDirError when the
 * file can't be written (and then listens no more). `close` stops it and
 * removes the file.
 */
export class LocalApi {
  #inFlight = 0;

  private constructor(
    private readonly server: Server,
    private readonly o: LocalApiOptions,
  ) {}

  static async start(options: LocalApiOptions): Promise<LocalApi> {
    const server = createServer();
    const api = new LocalApi(server, options);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      api.handle(req, res).catch((err: unknown) => {
        if (err instanceof LocalApiNotReadyError && !res.headersSent) return sendError(res, 'unavailable', err.message);
        options.logger.error({ err }, 'local API request failed');
        if (!res.headersSent) sendError(res, 'internal', errorMessage(err));
        else res.destroy();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err) => reject(new LocalApiListenError(`the local API can't listen on ${HOST}:${options.port}: ${errorMessage(err)}`, { cause: err })));
      server.listen(options.port, HOST, () => resolve());
    });
    server.on('error', (err) => options.logger.error({ err }, 'local API server error'));
    try {
      await writeLocalApiAddress(options.stateDir, { host: HOST, port: api.port });
    } catch (err) {
      await api.#stop();
      throw new StateDirError(`writing the local API's address to ${localApiAddressPath(options.stateDir)} failed: ${errorMessage(err)}`, { cause: err });
    }
    return api;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Where clients find the port. */
  get addressFile(): string {
    return localApiAddressPath(this.o.stateDir);
  }

  async close(): Promise<void> {
    await this.#stop();
    // Clients would otherwise find a closed port, or another program's once it is reused.
    await removeLocalApiAddress(this.o.stateDir).catch((err: unknown) => this.o.logger.warn({ err, path: this.addressFile }, "removing the local API's address file failed"));
  }

  async #stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    if (!LOOPBACK_HOSTS.has(host)) return sendError(res, 'forbidden', 'the local API answers only requests addressed to 127.0.0.1 or localhost');
    const path = (req.url ?? '/').split('?')[0];
    req.resume();
    const cancel = new AbortController();
    res.on('close', () => cancel.abort());
    if (path === AGENT_LOCAL_ROUTES.status && req.method === 'GET') {
      return send(res, 200, await this.o.handlers.status(cancel.signal));
    }
    if (path === AGENT_LOCAL_ROUTES.forceSync && req.method === 'POST') {
      if (this.#inFlight >= (this.o.maxConcurrent ?? 4)) return sendError(res, 'too_many_requests', 'force-syncs are already running; retry');
      this.#inFlight++;
      try {
        const signal = AbortSignal.any([cancel.signal, AbortSignal.timeout(this.o.forceSyncTimeoutMs ?? RPC_ANSWER_TIMEOUT_MS)]);
        const result = await this.o.handlers.forceSync(signal);
        return send(res, 200, result);
      } catch (err) {
        const { code, message } = forceSyncFailure(err);
        this.o.logger.warn({ code, message }, 'force-sync failed');
        return sendError(res, code, message);
      } finally {
        this.#inFlight--;
      }
    }
    return sendError(res, 'not_found', `no ${req.method ?? ''} ${path ?? ''} here; try GET ${AGENT_LOCAL_ROUTES.status} or POST ${AGENT_LOCAL_ROUTES.forceSync}`);
  }
}
