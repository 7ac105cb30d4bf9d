export type { SignalBus, Subscription } from './signal-bus.js';
export { LocalSubscriptions } from './local-subscriptions.js';
export { MemoryBus } from './memory-bus.js';
