export { Fleet, type FleetOptions } from './fleet.js';
export type { Presence } from './presence.js';
export type { StatusOutcome } from './status-batcher.js';
export { EphemeralCollector, type EphemeralCollectorOptions, type CollectResult } from './ephemeral-collector.js';
