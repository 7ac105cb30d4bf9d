export { Fleet, type FleetOptions } from './fleet.js';
export type { Presence } from './presence.js';
export type { StatusOutcome } from './status-batcher.js';
