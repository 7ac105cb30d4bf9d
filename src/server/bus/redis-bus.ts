import { Redis, type RedisOptions } from 'ioredis';
import { BUS } from '../../protocol/index.js';
import { fullJitterDelay } from '../../util/backoff.js';
import { ReliableBus } from './reliable-bus.js';
import type { ReliabilityOptions } from './reliability-options.js';

/**
 * The Redis bus: pub/sub on BUS.redisChannel, one publishing and one
 * subscribing connection. Redis has no transactions shared with the
 * database, so `notifyInTransaction` returns false and the caller notifies
 * after commit.
 *
 * Both connections reconnect by themselves (backoff with full jitter). While
 * the publisher is down, sends fail at once instead of queueing (nothing
 * grows without bound): the numbers they used become gaps elsewhere, and
 * local subscribers are woken directly. After the subscriber reconnects it
 * subscribes again and, once Redis confirms, wakes everything local; after
 * the publisher reconnects it sends a hello so others notice what they lost.
 */
export class RedisBus extends ReliableBus {
  private readonly pub: Redis;
  private readonly sub: Redis;
  private subReadyCount = 0;
  private pubReadyCount = 0;

  private constructor(url: string, options: ReliabilityOptions) {
    super(options);
    const common: RedisOptions = {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      retryStrategy: (times) => 10 + fullJitterDelay(times, 100, 2_000),
    };
    this.pub = new Redis(url, common);
    // We subscribe again ourselves, to know when the subscription is live.
    this.sub = new Redis(url, { ...common, autoResubscribe: false });
    this.pub.on('error', (err: unknown) => options.logger.warn({ err, connection: 'publisher' }, 'redis bus connection error'));
    this.sub.on('error', (err: unknown) => options.logger.warn({ err, connection: 'subscriber' }, 'redis bus connection error'));
    this.sub.on('message', (channel: string, message: string) => {
      if (channel === BUS.redisChannel) this.received(message);
    });
    this.sub.on('ready', () => this.subscriberReady());
    this.pub.on('ready', () => {
      if (this.pubReadyCount++ === 0 || this.closed) return;
      options.logger.info('redis bus publisher reconnected');
      this.publisher.requestHello();
    });
  }

  /** Connects, subscribes (rejects if it can't) and announces this publisher. */
  static async open(url: string, options: ReliabilityOptions): Promise<RedisBus> {
    const bus = new RedisBus(url, options);
    try {
      await Promise.all([bus.pub.connect(), bus.sub.connect()]);
      await bus.sub.subscribe(BUS.redisChannel);
    } catch (err) {
      bus.pub.disconnect();
      bus.sub.disconnect();
      throw err;
    }
    bus.startReliability();
    return bus;
  }

  async notifyInTransaction(): Promise<boolean> {
    return false;
  }

  protected async publishPayloads(payloads: readonly string[]): Promise<void> {
    const [first] = payloads;
    if (payloads.length === 1 && first !== undefined) {
      await this.pub.publish(BUS.redisChannel, first);
      return;
    }
    const pipeline = this.pub.pipeline();
    for (const p of payloads) pipeline.publish(BUS.redisChannel, p);
    const results = await pipeline.exec();
    if (!results) throw new Error('redis discarded the publish pipeline');
    for (const [err] of results) if (err) throw err;
  }

  protected async restartListener(): Promise<void> {
    if (this.closed) return;
    // Reconnecting runs the same path as a dropped connection: ready → subscribe → wake all.
    this.sub.disconnect(true);
  }

  protected async closeTransport(): Promise<void> {
    this.sub.disconnect();
    try {
      await this.pub.quit();
    } catch (err) {
      this.options.logger.debug({ err }, 'redis bus publisher quit failed; disconnecting');
      this.pub.disconnect();
    }
  }

  private subscriberReady(): void {
    if (this.subReadyCount++ === 0 || this.closed) return;
    this.sub.subscribe(BUS.redisChannel).then(
      () => {
        if (this.closed) return;
        this.options.logger.warn('redis bus subscriber reconnected: waking every watcher');
        this.listenerReconnected();
      },
      (err: unknown) => {
        // The connection retries and comes back through here; the self-check covers a live but deaf one.
        this.options.logger.error({ err }, 'redis bus subscribe after reconnect failed');
      },
    );
  }
}
