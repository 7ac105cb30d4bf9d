import { Type } from '@sinclair/typebox';
import { METRICS_SCOPE, QUERY, ROUTES } from '../../../protocol/index.js';
import type { App } from '../app.js';
import type { ServerContext } from '../context.js';
import { ApiError } from '../../errors.js';
import { errors, json } from '../route-responses.js';

export function registerSystemRoutes(app: App, ctx: ServerContext): void {
  app.get(ROUTES.healthz, { schema: { hide: true } }, async () => ({ status: 'ok' }));

  app.get(ROUTES.readyz, { schema: { hide: true } }, async (_req, reply) => {
    if (await ctx.isReady()) return { status: 'ready' };
    const err = new ApiError('unavailable', 'not ready');
    return reply.status(err.status).send(err.toBody());
  });

  app.get<{ Querystring: Record<string, string | undefined> }>(ROUTES.metrics, { schema: { hide: true } }, async (req, reply) => {
    const whole = req.query[QUERY.scope] === METRICS_SCOPE.process ? undefined : ctx.clusterMetrics;
    const text = whole
      ? await whole().catch((err: unknown) => {
          throw new ApiError('unavailable', `the workers' metrics could not be collected; ?${QUERY.scope}=${METRICS_SCOPE.process} gives this worker's`, undefined, { cause: err });
        })
      : await ctx.metrics.registry.metrics();
    return reply.type(ctx.metrics.registry.contentType).send(text);
  });

  app.get(
    ROUTES.openapi,
    {
      schema: {
        tags: ['system'],
        operationId: 'getOpenApiDocument',
        summary: 'This OpenAPI document',
        security: [],
        // Unknown parameters are refused, as on every route.
        querystring: Type.Object({}, { additionalProperties: false }),
        response: {
          200: json('The OpenAPI 3.1 document of this API.', Type.Object({}, { additionalProperties: true, description: 'An OpenAPI 3.1 document.' })),
          ...errors([400]),
        },
      },
    },
    async () => app.swagger(),
  );
}
