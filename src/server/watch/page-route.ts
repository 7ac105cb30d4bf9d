import type { StreamSocket } from '../streams/index.js';
import { MEDIA, OrgParams, PageLineSchema, PageRequest, ROUTES } from '../../protocol/index.js';
import type { RouteModule } from '../http/context.js';
import { errors } from '../http/route-responses.js';
import { revocableTokenOf } from '../principal/index.js';
import { validationFailed } from '../errors.js';
import type { WatchEngine } from './engine.js';

/** Where a page stream's convergence and statuses come from (the fleet's convergence streams). */
export interface PageFollower {
  attachPage(socket: StreamSocket, orgId: string, wants: { convergence: boolean; statuses: boolean }): void;
}

/**
 * `POST /api/organizations/{org}/page` (docs/protocol.md "Page stream"): a
 * watch stream that also carries the organization's convergence and its
 * devices' statuses, so that a page of the dashboard holds one stream.
 */
export function pageRoutes(engine: WatchEngine, follower: PageFollower): RouteModule {
  return {
    register(app, ctx) {
      app.post(
        ROUTES.page,
        {
          schema: {
            tags: ['watch'],
            operationId: 'pageStream',
            summary: `One stream for a page (${MEDIA.watch}): the watch events of its watches, the convergence and device statuses`,
            params: OrgParams,
            body: PageRequest,
            response: {
              200: {
                description: 'The stream: one PageLine per line (newline-delimited JSON), until the connection or an error line ends it.',
                content: { [MEDIA.watch]: { schema: PageLineSchema } },
              },
              ...errors(
                [400, 401, 403, 404, 410, 413, 503],
                { 410: 'A gt_revision is older than the organization keeps: list again from 0', 503: 'No initial-list turn in time, or shutting down' },
                { retryAfter: true },
              ),
            },
          },
        },
        async (req, reply) => {
          const { watches } = req.body;
          const seen = new Set<string>();
          watches.forEach((w, i) => {
            if (seen.has(w.kind)) throw validationFailed(`/watches/${i}/kind`, `each kind at most once ("${w.kind}" repeats)`);
            seen.add(w.kind);
          });
          const wants = { convergence: req.body.convergence === true, statuses: req.body.statuses === true };
          const p = await ctx.access.principalOf(req);
          const prepared = await engine.prepare(req.params.org, watches);
          engine.open(reply, prepared, {
            orgId: req.params.org,
            watches,
            tokenId: revocableTokenOf(p),
            deviceId: p.type === 'device' ? p.deviceId : undefined,
            // The convergence comes from the replica's shared view, read after the list has started, not before it.
            alongside: (socket) => follower.attachPage(socket, req.params.org, wants),
          });
        },
      );
    },
  };
}
