import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { ROUTES } from '../../protocol/index.js';
import type { TunnelPrincipal } from '../access/index.js';
import { ApiError, shuttingDown } from '../errors.js';
import { rawErrorResponse } from '../http/raw-error-response.js';

export interface TunnelEndpointOptions<P = TunnelPrincipal> {
  /** The path it answers (default the agent tunnel's). */
  path?: string;
  /** Resolves and authorizes the upgrade's device (the access module's `authorizeTunnel`): throws its 401 or 403. */
  authorize: (headers: IncomingMessage['headers']) => Promise<P>;
  /** True once the gateway shuts down: upgrades are refused with 503. */
  closing: () => boolean;
  maxPayloadBytes: number;
  /** Header lines (`Name: value`) added to every upgrade's answer. */
  responseHeaders?: readonly string[];
  /** Completes the upgrade of an authorized device (through the stream owner, which then holds the connection). */
  upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer, wss: WebSocketServer, device: P) => void;
  logger: Logger;
}

function refuse(socket: Duplex, err: ApiError): void {
  socket.end(rawErrorResponse(err));
}

/** The paths of the endpoints attached to each server, in the order they were attached. */
const endpointsOf = new WeakMap<Server, string[]>();

/**
 * A device's WebSocket endpoint on the API server (`GET /api/agent/tunnel`
 * by default; the relay session uses it too) with `Upgrade: websocket`: only
 * a device token may open one (missing or unknown token: 401; any other
 * token: 403). Upgrades of paths no endpoint and no other listener takes are
 * refused with 404, once, by the first endpoint attached. Returns a function
 * that detaches it.
 */
export function attachTunnelEndpoint<P = TunnelPrincipal>(server: Server, options: TunnelEndpointOptions<P>): () => void {
  const own = options.path ?? ROUTES.agentTunnel;
  const endpoints = endpointsOf.get(server) ?? [];
  endpointsOf.set(server, endpoints);
  endpoints.push(own);
  const wss = new WebSocketServer({ noServer: true, clientTracking: false, maxPayload: options.maxPayloadBytes });
  const extra = options.responseHeaders ?? [];
  if (extra.length > 0) wss.on('headers', (headers: string[]) => headers.push(...extra));
  // Made once: a listener made per upgrade would keep the upgrade's whole scope (its request, headers and
  // all) alive for as long as the tunnel lives, about 1.5 KB per connected agent.
  const onSocketError = (err: Error): void => options.logger.debug({ err, path: own }, 'upgrade socket error');
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const path = (req.url ?? '').split('?')[0] ?? '';
    if (path !== own) {
      const unclaimed = !endpoints.includes(path) && server.listenerCount('upgrade') === endpoints.length;
      if (unclaimed && endpoints[0] === own) refuse(socket, new ApiError('not_found', `no WebSocket endpoint at ${path}`));
      return;
    }
    socket.on('error', onSocketError);
    void authorize(req)
      .then((device) => {
        if (socket.destroyed) return;
        options.upgrade(req, socket, head, wss, device);
      })
      .catch((err: unknown) => {
        const api = err instanceof ApiError ? err : new ApiError('internal', undefined, undefined, { cause: err });
        if (api.code === 'internal') options.logger.error({ err, path: own }, 'upgrade failed');
        else options.logger.debug({ code: api.code, path: own }, 'upgrade refused');
        refuse(socket, api);
      });
  };
  const authorize = async (req: IncomingMessage): Promise<P> => {
    if (options.closing()) throw shuttingDown('the server is shutting down; connect elsewhere');
    return options.authorize(req.headers);
  };
  server.on('upgrade', onUpgrade);
  return () => {
    server.off('upgrade', onUpgrade);
    const at = endpoints.indexOf(own);
    if (at >= 0) endpoints.splice(at, 1);
    wss.close();
  };
}
