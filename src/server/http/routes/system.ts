import { Type } from '@sinclair/typebox';
import { METRICS_SCOPE, QUERY, ROUTES } from '../../../protocol/index.js';
import type { App } from '../app.js';
import type { ServerContext } from '../context.js';
import { ApiError } from '../../errors.js';

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
    { schema: { summary: 'This OpenAPI document', security: [], response: { 200: Type.Object({}, { additionalProperties: true }) } } },
    async () => app.swagger(),
  );
}
