import { Type } from '@sinclair/typebox';
import {
  DeviceRpcParams,
  DeviceRpcQuery,
  ErrorResponse,
  ROUTES,
  RPC_ANSWER_TIMEOUT_MS,
  RPC_WAIT_DEFAULT_S,
} from '../../protocol/index.js';
import { ApiError, notFound, shuttingDown } from '../errors.js';
import type { RouteModule } from '../http/context.js';
import { resultOf } from './delivery.js';
import type { RpcRouter } from './rpc-router.js';
import { empty, errors as errorResponses, json } from '../http/route-responses.js';

const tags = ['agents'];
const errors = errorResponses([400, 401, 403, 404, 413, 429, 502, 503, 504], {
  429: 'Every tunnel of the device has the most unanswered requests it may hold',
  502: "The agent answered with an error: details carry it (deadline_exceeded when it didn't answer in time)",
  503: 'The tunnel or the replica holding it went away mid-request (the request may have run: never retried)',
  504: 'The device did not connect within ?wait=',
});

/**
 * `POST /api/organizations/{org}/devices/{id}/rpc/{method}?wait=S`: the JSON
 * body (absent: `{}`) is the params; 200 with the agent's result as the
 * body. A caller that disconnects stops its request wherever it waits.
 * Who may call which method is the access table's (src/server/access/rules.ts).
 * Also `GET /api/agent/tunnel` without an upgrade: 401 without a valid token, else 400.
 */
export function rpcRoutes(router: RpcRouter, closing: () => boolean): RouteModule {
  return {
    register(app, ctx) {
      app.post(
        ROUTES.deviceRpc,
        {
          schema: {
            tags,
            operationId: 'callAgent',
            summary: 'Call a method of the device agent, wherever it is connected (waits up to ?wait= seconds for it to connect)',
            params: DeviceRpcParams,
            querystring: DeviceRpcQuery,
            response: { 200: json("The agent's result as it is (null when it returned nothing).", Type.Unknown({ description: "The agent's result." })), ...errors },
          },
        },
        async (req, reply) => {
          const { org, id, method } = req.params;
          const body: unknown = req.body ?? {};
          if (typeof body !== 'object' || body === null || Array.isArray(body)) {
            throw new ApiError('validation_failed', '/: the params must be a JSON object', { path: '/', expected: 'object' });
          }
          if (!(await ctx.store.devices.get(org, id))) throw notFound('device');
          if (closing()) throw shuttingDown();
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

      const tunnelResponses = {
        101: empty('Switching Protocols: the tunnel is open (WebSocket; frames in docs/protocol.md "Agent tunnel").'),
        ...errorResponses([400, 401, 403, 503], {
          400: 'Not a WebSocket upgrade',
          401: 'No valid device token',
          403: 'A token other than a device token',
        }),
        // A WebSocket's success is 101, which OpenAPI linters don't count as one: this catch-all stands for the handshake's outcomes.
        default: json('Any other outcome of the handshake: the error body.', ErrorResponse),
      };
      app.get(ROUTES.agentTunnel, { schema: { tags, operationId: 'openAgentTunnel', summary: 'The agent tunnel (WebSocket upgrade only)', response: tunnelResponses } }, async () => {
        throw new ApiError('bad_request', 'the agent tunnel needs a WebSocket upgrade');
      });
    },
  };
}
