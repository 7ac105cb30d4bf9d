import type { Logger } from 'pino';
import type { BackoffPolicy } from '../util/backoff.js';
import type { ListenAddress } from './options.js';
import { policySource, type SourceFetch } from './source.js';
import { listenSync } from './sync-listener.js';
import { SyncMetrics } from './sync-metrics.js';
import { PolicySyncer, type PolicyClient } from './syncer.js';

export interface SyncServiceOptions {
  client: PolicyClient;
  /** The organization's id, resolved when first needed (see SyncerOptions.org). */
  org: (signal: AbortSignal) => Promise<string>;
  /** A file path (relative to `cwd`), a `file:` URL or an http(s) URL. */
  from: string;
  intervalMs: number;
  timeoutMs: number;
  listen: ListenAddress;
  logger: Logger;
  /** Aborting stops the loop; `close` then waits for it and closes the listener. */
  signal: AbortSignal;
  cwd?: string;
  /** For http(s) sources; default the global fetch. */
  fetch?: SourceFetch;
  backoff?: Partial<BackoffPolicy>;
}

export interface SyncService {
  /** The local API's base URL. */
  url: string;
  syncer: PolicySyncer;
  metrics: SyncMetrics;
  /** Resolves when the loop has stopped (the signal aborted). */
  done: Promise<void>;
  /** Waits for the loop to stop (abort the signal first) and closes the listener. */
  close(): Promise<void>;
}

/**
 * `fleetplane sync` without its command line: listens (so a force-sync is
 * possible from the start), then syncs at once and every interval until
 * the signal aborts. A listener that can't bind rejects, before any sync.
 */
export async function startSyncService(o: SyncServiceOptions): Promise<SyncService> {
  const metrics = new SyncMetrics();
  const source = policySource(o.from, { timeoutMs: o.timeoutMs, ...(o.cwd === undefined ? {} : { cwd: o.cwd }), ...(o.fetch === undefined ? {} : { fetch: o.fetch }) });
  const syncer = new PolicySyncer({
    client: o.client,
    org: o.org,
    source,
    intervalMs: o.intervalMs,
    metrics,
    logger: o.logger,
    ...(o.backoff === undefined ? {} : { backoff: o.backoff }),
  });
  const listener = await listenSync(o.listen, syncer, metrics, o.signal);
  o.logger.info({ url: listener.url, source: source.location, interval_ms: o.intervalMs }, 'policy syncer listening');
  const done = syncer.run(o.signal);
  return {
    url: listener.url,
    syncer,
    metrics,
    done,
    close: async () => {
      await done;
      await listener.close();
    },
  };
}
