import { Type } from '@sinclair/typebox';
import { Convergence, ConvergenceEventSchema, DeviceStatus, DeviceStatusInput, MEDIA, OrgIdParams, OrgParams, QUERY, ROUTES } from '../../protocol/index.js';
import type { RouteModule } from '../http/context.js';
import { revocableTokenOf } from '../principal/index.js';
import { errors, json } from '../http/route-responses.js';
import type { Fleet } from './fleet.js';

const ConvergenceQuery = Type.Object(
  { [QUERY.watch]: Type.Optional(Type.Boolean({ description: 'Follow the convergence: an NDJSON stream of convergence lines.' })) },
  { additionalProperties: false },
);

/**
 * `PUT .../devices/{id}/status` (through the status batcher) and `GET .../convergence[?watch=true]`.
 * Who may call them is the access table's (src/server/access/rules.ts): only the device itself writes its status.
 */
export function fleetRoutes(fleet: Fleet): RouteModule {
  return {
    register(app, ctx) {
      app.put(
        ROUTES.deviceStatus,
        {
          schema: {
            tags: ['devices'],
            operationId: 'putDeviceStatus',
            summary: "Report a device's observed state (device token only; changes no revision); answered once its batch committed",
            params: OrgIdParams,
            body: DeviceStatusInput,
            response: {
              200: json('The status as recorded (with online and last_seen as readers see them).', DeviceStatus),
              ...errors([400, 401, 403, 404, 413, 503], { 503: 'Too many statuses are waiting to be written, or shutting down' }, { retryAfter: true }),
            },
          },
        },
        async (req) => {
          const input = req.body;
          const outcome = await fleet.batcher.submit({ deviceId: req.params.id, orgId: req.params.org, input, via: 'put' });
          if (!outcome.ok) throw outcome.error;
          // Answered from what was just written, not read back: a fleet of PUTs costs its batches, not a query each.
          const status: DeviceStatus = {
            applied_revision: input.applied_revision,
            apply_error: input.apply_error,
            local_endpoints: input.local_endpoints,
            os: input.os,
            agent_version: input.agent_version,
            peers: input.peers ?? [],
            peers_truncated: input.peers_truncated ?? false,
            online: fleet.presence.has(req.params.id) || (input.online ?? true),
            last_seen: new Date().toISOString(),
          };
          return status;
        },
      );

      app.get(
        ROUTES.convergence,
        {
          schema: {
            tags: ['organizations'],
            operationId: 'getConvergence',
            summary: `How many devices applied the head revision; with ?watch=true, a stream of it (${MEDIA.watch})`,
            params: OrgParams,
            querystring: ConvergenceQuery,
            response: {
              200: {
                description: `The convergence (${MEDIA.json}); with ?watch=true, a stream of ConvergenceEvent lines (${MEDIA.watch}) until an error line or the connection ends it.`,
                content: { [MEDIA.json]: { schema: Convergence }, [MEDIA.watch]: { schema: ConvergenceEventSchema } },
              },
              ...errors([400, 401, 403, 404]),
            },
          },
        },
        async (req, reply) => {
          const current = await ctx.store.convergence.of(req.params.org);
          if (req.query[QUERY.watch] !== true) return current;
          const p = await ctx.access.principalOf(req);
          fleet.convergence.open(reply, req.params.org, current, revocableTokenOf(p));
          return reply;
        },
      );
    },
  };
}
