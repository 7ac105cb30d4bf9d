import type { Logger } from 'pino';
import type { Access } from '../access/index.js';
import type { Settings } from '../config/settings.js';
import type { Store } from '../store/index.js';
import type { SignalBus } from '../bus/index.js';
import type { Metrics } from '../metrics.js';
import type { ConnectionLimiter } from './connection-limits.js';

/** Optional parts that later layers attach (the watch engine, the agent gateway, ...). */
export interface RouteModule {
  /** Registers this module's routes on the app; each needs its rule in the access table (src/server/access/rules.ts), or registering it fails. */
  register(app: import('./app.js').App, ctx: ServerContext): void;
}

/** Everything a route needs, built once per server. */
export interface ServerContext {
  readonly settings: Settings;
  readonly store: Store;
  readonly bus: SignalBus;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Who may do what: every route's guard, and the principal of a request. */
  readonly access: Access;
  /** Counts and limits the connections of every listener of this server. */
  readonly connections: ConnectionLimiter;
  /** Under `--workers`: every worker's metrics, aggregated by the primary. Undefined in a single process. */
  readonly clusterMetrics: (() => Promise<string>) | undefined;
  /** True once migrations ran and until shutdown began. */
  isReady(): Promise<boolean>;
  /**
   * True once shutdown began (the listener is closed, streams and tunnels are
   * ending): requests on connections already open are served, statuses
   * recorded, and answered with `Connection: close`, so a client's next
   * request goes to the next server, not into an error. The last status
   * batch is written only after the last connection closed.
   */
  draining(): boolean;
}
