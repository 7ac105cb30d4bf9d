import type { Logger } from 'pino';
import type { Settings } from '../config/settings.js';
import type { Database } from '../db/index.js';
import type { BusStats } from './bus-stats.js';
import { MemoryBus } from './memory-bus.js';
import { PostgresBus } from './postgres-bus.js';
import { RedisBus } from './redis-bus.js';
import type { ReliabilityOptions } from './reliability-options.js';
import type { SignalBus } from './signal-bus.js';

/** A bus as the factory returns it: the reliable drivers also expose their counters. */
export type ObservableBus = SignalBus & { readonly stats?: Readonly<BusStats> };

/**
 * Builds the bus `settings.bus` names, started and listening: `memory`
 * (this process only), `postgres` (NOTIFY/LISTEN on `db`, PGlite included)
 * or `redis` (`settings.redisUrl`). `overrides` tunes the reliable drivers
 * (tests: `dropEvery`, `forgetAfterMs`).
 */
export async function createBus(
  settings: Settings,
  db: Database,
  logger: Logger,
  overrides: Partial<Omit<ReliabilityOptions, 'logger'>> = {},
): Promise<ObservableBus> {
  const options: ReliabilityOptions = {
    helloIntervalMs: settings.busHelloInterval * 1000,
    gapDelayMs: settings.busGapDelay * 1000,
    ...overrides,
    logger: logger.child({ component: 'bus', bus: settings.bus }),
  };
  switch (settings.bus) {
    case 'memory':
      return new MemoryBus();
    case 'postgres':
      return PostgresBus.open(db, options);
    case 'redis':
      if (!settings.redisUrl) throw new Error('--bus redis needs --redis-url');
      return RedisBus.open(settings.redisUrl, options);
  }
}
