import { Type } from '@sinclair/typebox';
import {
  DeviceRpcParams,
  DeviceRpcQuery,
  ErrorResponse,
  READ_ONLY_AGENT_METHODS,
  ROUTES,
  RPC_ANSWER_TIMEOUT_MS,
  RPC_WAIT_DEFAULT_S,
} from '../../protocol/index.js';
import { ApiError, notFound } from '../errors.js';
import { requireOrgAccess } from '../http/auth.js';
import type { RouteModule } from '../http/context.js';
import { principalOf } from '../http/routes/shared.js';
import type { Principal } from '../store/index.js';
import { resultOf } from './delivery.js';
import type { RpcRouter } from './rpc-router.js';

const tags = ['agents'];
const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 429: ErrorResponse, 502: ErrorResponse, 503: ErrorResponse, 504: ErrorResponse };

/**
 * docs/protocol.md "Authentication and scope" applied to agent calls: the admin
 * token and organization admins may call any method; read tokens only
 * `ping` and `status`; device tokens and registration keys nothing.
 */
function requireRpcAccess(p: Principal, orgId: string, method: string): void {
  requireOrgAccess(p, orgId, 'read');
  if (p.type === 'admin' || (p.type === 'org' && p.role === 'admin')) return;
  if (p.type === 'device') throw new ApiError('forbidden', 'a device token may not call agents');
  if (!READ_ONLY_AGENT_METHODS.includes(method)) {
    throw new ApiError('forbidden', `a read token may call only ${READ_ONLY_AGENT_METHODS.join(' and ')}`);
  }
}

/**
 * `POST /api/organizations/{org}/devices/{id}/rpc/{method}?wait=S`: the JSON
 * body (absent: `{}`) is the params; 200 with the agent's result as the
 * body. A caller that disconnects stops its request wherever it waits.
 * Also `GET /api/agent/tunnel` without an upgrade: 400.
 */
export function rpcRoutes(router: RpcRouter, closing: () => boolean): RouteModule {
  return {
    register(app, ctx) {
      app.post(
        ROUTES.deviceRpc,
        {
          schema: {
            tags,
            summary: 'Call a method of the device agent, wherever it is connected (waits up to ?wait= seconds for it to connect)',
            params: DeviceRpcParams,
            querystring: DeviceRpcQuery,
            response: { 200: Type.Unknown({ description: "The agent's result." }), ...errors },
          },
        },
        async (req, reply) => {
          const { org, id, method } = req.params;
          requireRpcAccess(await principalOf(req, ctx), org, method);
          const body: unknown = req.body ?? {};
          if (typeof body !== 'object' || body === null || Array.isArray(body)) {
            throw new ApiError('validation_failed', '/: the params must be a JSON object', { path: '/', expected: 'object' });
          }
          if (!(await ctx.store.getDevice(org, id))) throw notFound('device');
          if (closing()) throw new ApiError('unavailable', 'the server is shutting down');
          const gone = new AbortController();
          reply.raw.once('close', () => {
            if (!reply.raw.writableFinished) gone.abort(new Error('the caller went away'));
          });
          const waitS = req.query.wait ?? RPC_WAIT_DEFAULT_S;
          try {
            const d = await router.call({
              deviceId: id,
              method,
              params: body as Record<string, unknown>,
              answerMs: RPC_ANSWER_TIMEOUT_MS,
              connectDeadline: Date.now() + waitS * 1000,
              signal: gone.signal,
            });
            return reply.type('application/json').send(JSON.stringify(resultOf(d) ?? null));
          } catch (err) {
            if (gone.signal.aborted && !(err instanceof ApiError)) throw new ApiError('unavailable', 'the caller went away');
            throw err;
          }
        },
      );

      app.get(ROUTES.agentTunnel, { schema: { tags, summary: 'The agent tunnel (WebSocket upgrade only)', response: { 400: ErrorResponse } } }, async () => {
        throw new ApiError('bad_request', 'the agent tunnel needs a WebSocket upgrade');
      });
    },
  };
}
