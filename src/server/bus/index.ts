export type { SignalBus, Subscription } from './signal-bus.js';
export { LocalSubscriptions } from './local-subscriptions.js';
export { MemoryBus } from './memory-bus.js';
export { createBusStats, totalResyncs, RESYNC_REASONS, type BusStats, type ResyncReason } from './bus-stats.js';
export type { ReliabilityOptions } from './reliability-options.js';
export { ReliableBus } from './reliable-bus.js';
export { PostgresBus } from './postgres-bus.js';
export { RedisBus } from './redis-bus.js';
export { createBus, type ObservableBus } from './create-bus.js';
