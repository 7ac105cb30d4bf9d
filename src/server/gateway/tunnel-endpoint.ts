import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { ROUTES } from '../../protocol/index.js';
import type { TunnelPrincipal } from '../access/index.js';
import { ApiError, shuttingDown } from '../errors.js';
import { rawErrorResponse } from '../http/raw-error-response.js';

export interface TunnelEndpointOptions {
  /** Resolves and authorizes the upgrade's device (the access module's `authorizeTunnel`): throws its 401 or 403. */
  authorize: (headers: IncomingMessage['headers']) => Promise<TunnelPrincipal>;
  /** True once the gateway shuts down: upgrades are refused with 503. */
  closing: () => boolean;
  maxPayloadBytes: number;
  /** Completes the upgrade of an authorized device (through the stream owner, which then holds the tunnel). */
  upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer, wss: WebSocketServer, device: TunnelPrincipal) => void;
  logger: Logger;
}

function refuse(socket: Duplex, err: ApiError): void {
  socket.end(rawErrorResponse(err));
}

/**
 * `GET /api/agent/tunnel` with `Upgrade: websocket` on the API server: only
 * a device token may open one (missing or unknown token: 401; any other
 * token: 403). Upgrades of other paths are left to other listeners, or
 * refused with 404 when there are none. Returns a function that detaches it.
 */
export function attachTunnelEndpoint(server: Server, options: TunnelEndpointOptions): () => void {
  const wss = new WebSocketServer({ noServer: true, clientTracking: false, maxPayload: options.maxPayloadBytes });
  // Made once: a listener made per upgrade would keep the upgrade's whole scope (its request, headers and
  // all) alive for as long as the tunnel lives, about 1.5 KB per connected agent.
  const onSocketError = (err: Error): void => options.logger.debug({ err }, 'tunnel upgrade socket error');
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== ROUTES.agentTunnel) {
      if (server.listenerCount('upgrade') === 1) refuse(socket, new ApiError('not_found', `no WebSocket endpoint at ${path ?? ''}`));
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
        if (api.code === 'internal') options.logger.error({ err }, 'tunnel upgrade failed');
        else options.logger.debug({ code: api.code }, 'tunnel refused');
        refuse(socket, api);
      });
  };
  const authorize = async (req: IncomingMessage): Promise<TunnelPrincipal> => {
    if (options.closing()) throw shuttingDown('the server is shutting down; connect elsewhere');
    return options.authorize(req.headers);
  };
  server.on('upgrade', onUpgrade);
  return () => {
    server.off('upgrade', onUpgrade);
    wss.close();
  };
}
