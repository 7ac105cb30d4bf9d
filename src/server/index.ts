/** The server: build, start and stop it programmatically. */
export { startServer, type FleetServer, type StartOptions } from './server.js';
export { DEFAULT_POOL_SIZE, EMBEDDED_POOL_SIZE } from './db/index.js';
export { parseSettings, makeSettings, SettingsError, SETTING_SPECS, DEFAULT_SETTINGS, type Settings } from './config/settings.js';
export type { ServerContext, RouteModule } from './http/context.js';
export type { App } from './http/app.js';
export { ApiError } from './errors.js';
export { serveClusterMetrics, ClusterMetricsError } from './cluster-metrics.js';
export { serveClusterAgentRegistry, ClusterRegistryError, CLUSTER_REGISTRIES } from './gateway/index.js';
