import { MEDIA, OrgParams, ROUTES, WatchEventSchema, WatchRequest } from '../../protocol/index.js';
import type { RouteModule } from '../http/context.js';
import { errors } from '../http/route-responses.js';
import { revocableTokenOf } from '../principal/index.js';
import { validationFailed } from '../errors.js';
import type { WatchEngine } from './engine.js';

/** `POST /api/organizations/{org}/events` (docs/protocol.md "Watch"). */
export function watchRoutes(engine: WatchEngine): RouteModule {
  return {
    register(app, ctx) {
      app.post(
        ROUTES.events,
        {
          schema: {
            tags: ['watch'],
            operationId: 'watchEvents',
            summary: `List and watch: an NDJSON stream (${MEDIA.watch}) of change, delete, tail, bookmark and error events`,
            params: OrgParams,
            body: WatchRequest,
            response: {
              200: {
                description: 'The stream: one WatchEvent per line (newline-delimited JSON), until the connection or an error line ends it.',
                content: { [MEDIA.watch]: { schema: WatchEventSchema } },
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
          const seen = new Set<string>();
          req.body.forEach((w, i) => {
            if (seen.has(w.kind)) throw validationFailed(`/${i}/kind`, `each kind at most once ("${w.kind}" repeats)`);
            seen.add(w.kind);
          });
          const p = await ctx.access.principalOf(req);
          const prepared = await engine.prepare(req.params.org, req.body);
          engine.open(reply, prepared, {
            orgId: req.params.org,
            watches: req.body,
            tokenId: revocableTokenOf(p),
            deviceId: p.type === 'device' ? p.deviceId : undefined,
          });
        },
      );
    },
  };
}
