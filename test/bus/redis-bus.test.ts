import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBus, RedisBus, type ReliabilityOptions } from '../../src/server/bus/index.js';
import { makeSettings } from '../../src/server/config/settings.js';
import type { Database } from '../../src/server/db/index.js';
import { hasRedis, requireBinary } from '../support/binaries.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import {
  eventually,
  reliableDeliveryTests,
  silentLogger,
  testOptions,
  uniqueName,
  warmUp,
  WakeRecorder,
  type BusPair,
} from './bus-harness.js';

const runRedis = requireBinary('redis-server', hasRedis());

describe.runIf(runRedis)('RedisBus', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.dispose();
  });

  async function redisPair(aOptions: Partial<ReliabilityOptions>, bOptions: Partial<ReliabilityOptions>): Promise<BusPair> {
    const a = await RedisBus.open(redis.url, testOptions(aOptions));
    const b = await RedisBus.open(redis.url, testOptions(bOptions));
    return {
      a,
      b,
      // As the store does with a bus that can't notify inside transactions.
      send: async (from, name) => {
        expect(await (from as RedisBus).notifyInTransaction()).toBe(false);
        from.notify(name);
      },
      close: async () => void (await Promise.all([a.close(), b.close()])),
    };
  }

  reliableDeliveryTests(it, redisPair);

  it('survives a Redis restart: wakes all after reconnecting, then delivers again', async () => {
    const pair = await redisPair({}, {});
    try {
      await warmUp(pair);
      const [idle, later] = [uniqueName('idle'), uniqueName('after-restart')];
      const atB = new WakeRecorder(pair.b).watch(idle, later);
      await redis.stop({ crash: true });
      // Sent while Redis is down: fails at once, and the sender's own subscribers still hear of it.
      const during = uniqueName('during-outage');
      const atA = new WakeRecorder(pair.a).watch(during);
      pair.a.notify(during);
      await eventually('local wake despite the outage', () => atA.count(during) === 1);
      expect(pair.a.stats.sendFailures).toBeGreaterThanOrEqual(1);
      await redis.start();
      await eventually('the subscriber reconnected', () => pair.b.stats.reconnects >= 1);
      expect(pair.b.stats.resyncs.reconnect).toBe(pair.b.stats.reconnects);
      await eventually('every subscription woken', () => atB.count(idle) >= 1);
      // The publisher may reconnect after the subscriber: keep ringing until heard.
      await eventually('later notifications arrive', () => {
        pair.a.notify(later);
        return atB.count(later) >= 1;
      });
    } finally {
      await pair.close();
    }
  });

  it('createBus builds a listening Redis bus from the settings', async () => {
    const unused = async (): Promise<never> => {
      throw new Error('the redis bus must not use the database');
    };
    const db: Database = { kind: 'postgres', query: unused, transaction: unused, listen: unused, close: unused };
    const bus = await createBus(makeSettings({ bus: 'redis', redisUrl: redis.url, busHelloInterval: 0.1, busGapDelay: 0.05 }), db, silentLogger);
    try {
      expect(bus).toBeInstanceOf(RedisBus);
      const name = uniqueName('factory');
      const rec = new WakeRecorder(bus).watch(name);
      bus.notify(name);
      await eventually('own signal heard', () => rec.count(name) === 1);
    } finally {
      await bus.close();
    }
  });
});
