/**
 * `/metrics` under `--workers N`: whichever worker a scrape lands on answers
 * with the metrics of every worker, aggregated by the primary (prom-client's
 * AggregatorRegistry: counters and histograms summed, gauges by their
 * aggregator), so a Prometheus scraping the one port sees one consistent
 * server instead of a different process per scrape.
 */
import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { AggregatorRegistry, type Registry } from 'prom-client';

const REQUEST = 'fleetplane:metrics-request';
const REPLY = 'fleetplane:metrics-reply';
/** The primary's collection gives up after 5 s (prom-client); the worker waits a little longer. */
const WORKER_TIMEOUT_MS = 6_000;

interface MetricsRequest {
  type: typeof REQUEST;
  id: string;
}

interface MetricsReply {
  type: typeof REPLY;
  id: string;
  text?: string;
  error?: string;
}

function isRequest(m: unknown): m is MetricsRequest {
  return typeof m === 'object' && m !== null && (m as { type?: unknown }).type === REQUEST && typeof (m as { id?: unknown }).id === 'string';
}

function isReply(m: unknown): m is MetricsReply {
  return typeof m === 'object' && m !== null && (m as { type?: unknown }).type === REPLY && typeof (m as { id?: unknown }).id === 'string';
}

/** The cluster's metrics could not be collected (a worker didn't answer, the primary is gone). */
export class ClusterMetricsError extends Error {
  override readonly name = 'ClusterMetricsError';
}

/**
 * In the primary: answers the workers' requests for the whole cluster's
 * metrics. Returns a function that stops answering.
 */
export function serveClusterMetrics(logger: Logger): () => void {
  const aggregator = new AggregatorRegistry();
  const onMessage = (worker: { send(m: MetricsReply): boolean; isConnected(): boolean }, m: unknown): void => {
    if (!isRequest(m)) return;
    aggregator.clusterMetrics().then(
      (text) => {
        if (worker.isConnected()) worker.send({ type: REPLY, id: m.id, text });
      },
      (err: unknown) => {
        logger.warn({ err }, 'collecting the workers’ metrics failed');
        if (worker.isConnected()) worker.send({ type: REPLY, id: m.id, error: err instanceof Error ? err.message : String(err) });
      },
    );
  };
  cluster.on('message', onMessage);
  return () => cluster.off('message', onMessage);
}

/**
 * In a worker: offers `registry` to the primary's aggregation and returns
 * the function that fetches the cluster's metrics text through the primary
 * (rejects with ClusterMetricsError). Requests in flight are bounded by the
 * scrapes in flight, each ended by its timeout.
 */
export function clusterMetricsSource(registry: Registry): () => Promise<string> {
  AggregatorRegistry.setRegistries([registry]);
  // prom-client answers the primary's collection requests once an AggregatorRegistry exists in the process.
  new AggregatorRegistry();
  const pending = new Map<string, { resolve: (text: string) => void; reject: (err: Error) => void }>();
  process.on('message', (m: unknown) => {
    if (!isReply(m)) return;
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.text !== undefined) p.resolve(m.text);
    else p.reject(new ClusterMetricsError(`the primary could not collect the workers' metrics: ${m.error ?? 'no answer'}`));
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      if (!process.send || !process.connected) return reject(new ClusterMetricsError('not connected to the primary'));
      const id = randomUUID();
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new ClusterMetricsError(`the primary did not answer within ${WORKER_TIMEOUT_MS} ms`));
      }, WORKER_TIMEOUT_MS);
      timer.unref();
      pending.set(id, {
        resolve: (text) => {
          clearTimeout(timer);
          resolve(text);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      });
      const request: MetricsRequest = { type: REQUEST, id };
      process.send(request);
    });
}
