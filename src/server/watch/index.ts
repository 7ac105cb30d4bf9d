export { WatchEngine } from './engine.js';
export { WatchMetrics } from './watch-metrics.js';
export { watchRoutes } from './route.js';
export type { Watcher } from './watcher.js';
