import Fastify from 'fastify';
import { ERRORS, SYNC_ROUTES } from '../protocol/index.js';
import type { SyncMetrics } from './sync-metrics.js';
import type { PolicySyncer } from './syncer.js';
import type { ListenAddress } from './options.js';

export interface SyncListener {
  /** `http://host:port`, with the port the system gave for port 0. */
  url: string;
  close(): Promise<void>;
}

/**
 * Serves the syncer's local API (SYNC_ROUTES): `POST /sync` answers the
 * SyncResult of a sync started for it; `GET /metrics` the metrics. A sync
 * cut short by shutdown answers 503 `unavailable`. `signal`: the syncer's
 * lifetime, which forced syncs run under.
 */
export async function listenSync(address: ListenAddress, syncer: PolicySyncer, metrics: SyncMetrics, signal: AbortSignal): Promise<SyncListener> {
  const app = Fastify({ logger: false });
  // POST /sync takes no body: whatever a client sends (curl -d '', a JSON content type) is read and ignored.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: 64 * 1024 }, (_req, _body, done) => done(null, undefined));
  app.post(SYNC_ROUTES.sync, async (_req, reply) => {
    try {
      return await syncer.sync(signal);
    } catch {
      return reply.code(ERRORS.unavailable.status).send({ error: { code: 'unavailable', message: 'the syncer is stopping' } });
    }
  });
  app.get(SYNC_ROUTES.metrics, async (_req, reply) => {
    const { text, contentType } = await metrics.scrape();
    return reply.type(contentType).send(text);
  });
  await app.listen({ host: address.host, port: address.port });
  const bound = app.server.address();
  const port = typeof bound === 'object' && bound !== null ? bound.port : address.port;
  const host = address.host.includes(':') ? `[${address.host}]` : address.host;
  return {
    url: `http://${host}:${port}`,
    close: async () => {
      await app.close();
    },
  };
}
