import { ReplicaList, ROUTES } from '../../../protocol/index.js';
import { errors, json } from '../route-responses.js';
import type { RouteModule } from '../context.js';

/** `GET /api/replicas` (admin): the live replicas sharing this database. */
export function replicaRoutes(): RouteModule {
  return {
    register(app, ctx) {
      app.get(
        ROUTES.replicas,
        {
          schema: {
            tags: ['replicas'],
            operationId: 'listReplicas',
            summary: 'Live replicas (admin)',
            response: { 200: json('The replicas whose lease is live.', ReplicaList), ...errors([401, 403]) },
          },
        },
        async () => {
          const rows = await ctx.store.replicas.list();
          return {
            items: rows.map((r) => ({
              id: r.id,
              private_url: r.privateUrl,
              started_at: r.startedAt.toISOString(),
              lease_expires_at: r.leaseExpiresAt.toISOString(),
            })),
          };
        },
      );
    },
  };
}
