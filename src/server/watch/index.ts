export { WatchEngine } from './engine.js';
export { WatchMetrics } from './watch-metrics.js';
export { watchRoutes } from './route.js';
export { pageRoutes, type PageFollower } from './page-route.js';
export type { Watcher } from './watcher.js';
