/**
 * The policy syncer (`fleetplane sync`): keeps an organization's policy
 * document equal to a file or a URL, applying it only when it changed, and
 * serves a local API to force a sync and to scrape its metrics
 * (src/protocol/sync.ts). This file is its only public entry. Inside, one
 * concern each: options (the command line), source (reading the file or
 * URL), syncer (one sync, and the loop with its backoff), sync-metrics,
 * sync-listener (the local API) and sync-service (the parts together).
 */
export { parseSyncOptions, parseListen, syncHelp, SyncOptionsError, SYNC_DEFAULTS, SYNC_FLAGS, type SyncOptions, type SyncLogLevel, type ListenAddress, type ConnectionFlagName } from './options.js';
export { policySource, fileSource, urlSource, SourceError, type PolicySource, type SourceFetch } from './source.js';
export { PolicySyncer, type PolicyClient, type SyncerOptions } from './syncer.js';
export { SyncMetrics } from './sync-metrics.js';
export { listenSync, type SyncListener } from './sync-listener.js';
export { startSyncService, type SyncService, type SyncServiceOptions } from './sync-service.js';
