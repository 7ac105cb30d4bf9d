import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { REDIS_KEYS } from '../../protocol/index.js';
import { fullJitterDelay } from '../../util/backoff.js';
import type { AgentRegistry } from './agent-registry.js';

// Expiries use Redis's clock, so the replicas' clocks needn't agree.
const NOW_MS = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** KEYS[1] = device hash; ARGV = replica id, ttl ms. Sets the field's expiry; the key lives at least as long. */
const ADD = `${NOW_MS}
local ttl = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], ARGV[1], string.format('%d', now + ttl))
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1`;

/** KEYS[1] = device hash. Returns the replica ids whose field has not expired; deletes the others. */
const LOOKUP = `${NOW_MS}
local all = redis.call('HGETALL', KEYS[1])
local live = {}
for i = 1, #all, 2 do
  local expiry = tonumber(all[i + 1])
  if expiry and expiry > now then table.insert(live, all[i]) else redis.call('HDEL', KEYS[1], all[i]) end
end
return live`;

class LuaScript {
  readonly sha: string;
  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

const ADD_SCRIPT = new LuaScript(ADD);
const LOOKUP_SCRIPT = new LuaScript(LOOKUP);

export interface RedisAgentRegistryOptions {
  url: string;
  replicaId: string;
  /** The hash of an id (default REDIS_KEYS.agentRegistry: ids are device ids). */
  key?: (id: string) => string;
  /** What the log lines call this registry (default `agent registry`). */
  label?: string;
  /** Lifetime of an entry; refreshed every third of it. */
  ttlMs: number;
  connected: (deviceId: string) => boolean;
  /** Devices with a tunnel here now (refreshed each round). */
  devices: () => readonly string[];
  onRead?: () => void;
  logger: Logger;
}

interface SyncState {
  again: boolean;
  done: Promise<void>;
}

/**
 * The registry in Redis (`--redis-url`): a hash per device
 * (REDIS_KEYS.agentRegistry; or per id of another kind under `options.key`,
 * e.g. relay sessions), field = replica id, value = expiry (ms, Redis
 * clock). Fields are refreshed every ttl/3 and the key's TTL kept at least
 * ttl, so a crashed replica's fields lapse by themselves; expired fields are
 * deleted by the read that finds them, and a key whose fields all lapsed
 * expires. A clean disconnect deletes the field; `stop` deletes all of this
 * replica's fields.
 */
export class RedisAgentRegistry implements AgentRegistry {
  readonly #redis: Redis;
  readonly #syncing = new Map<string, SyncState>();
  /** Devices whose field this replica may have written and not deleted. */
  readonly #published = new Set<string>();
  readonly #stopping = new AbortController();
  #loop: Promise<void> | undefined;
  #reads = 0;
  readonly #key: (id: string) => string;
  readonly #label: string;

  constructor(private readonly options: RedisAgentRegistryOptions) {
    this.#key = options.key ?? REDIS_KEYS.agentRegistry;
    this.#label = options.label ?? 'agent registry';
    this.#redis = new Redis(options.url, {
      lazyConnect: true,
      enableAutoPipelining: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      retryStrategy: (times) => 10 + fullJitterDelay(times, 100, 2_000),
    });
    this.#redis.on('error', (err: unknown) => options.logger.warn({ err }, `${this.#label} redis connection error`));
  }

  get reads(): number {
    return this.#reads;
  }

  /** Connects (rejects if Redis can't be reached) and starts refreshing. */
  async start(): Promise<void> {
    await this.#redis.connect();
    this.#loop = this.refreshLoop(this.#stopping.signal);
  }

  async lookup(deviceId: string): Promise<string[]> {
    this.#reads++;
    this.options.onRead?.();
    const live = await LOOKUP_SCRIPT.run(this.#redis, [this.#key(deviceId)], []);
    return Array.isArray(live) ? live.filter((v): v is string => typeof v === 'string') : [];
  }

  sync(deviceId: string): Promise<void> {
    const current = this.#syncing.get(deviceId);
    if (current) {
      current.again = true;
      return current.done;
    }
    const state: SyncState = { again: false, done: Promise.resolve() };
    this.#syncing.set(deviceId, state);
    state.done = (async () => {
      try {
        do {
          state.again = false;
          await this.apply(deviceId);
        } while (state.again);
      } finally {
        this.#syncing.delete(deviceId);
      }
    })();
    return state.done;
  }

  /** Stops refreshing, deletes every field of this replica, disconnects. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.#loop;
    await Promise.all([...this.#syncing.values()].map((s) => s.done));
    const devices = [...this.#published];
    if (devices.length > 0) {
      try {
        await Promise.all(devices.map((d) => this.#redis.hdel(this.#key(d), this.options.replicaId)));
        this.#published.clear();
      } catch (err) {
        this.options.logger.warn({ err, devices: devices.length }, `could not remove this replica from the ${this.#label}; its entries will expire`);
      }
    }
    this.#redis.disconnect();
  }

  private async apply(deviceId: string): Promise<void> {
    const key = this.#key(deviceId);
    const { replicaId, ttlMs, logger } = this.options;
    try {
      if (this.options.connected(deviceId)) {
        this.#published.add(deviceId);
        await ADD_SCRIPT.run(this.#redis, [key], [replicaId, ttlMs]);
      } else {
        await this.#redis.hdel(key, replicaId);
        this.#published.delete(deviceId);
      }
    } catch (err) {
      logger.warn({ err, id: deviceId }, `${this.#label} write failed; the refresh will repair it`);
    }
  }

  private async refreshLoop(signal: AbortSignal): Promise<void> {
    const interval = this.options.ttlMs / 3;
    while (!signal.aborted) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, interval);
        function done(): void {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          resolve();
        }
        signal.addEventListener('abort', done, { once: true });
      });
      if (signal.aborted) return;
      // Devices published but no longer connected get their failed delete retried too.
      const devices = new Set([...this.options.devices(), ...this.#published]);
      await Promise.all([...devices].map((d) => this.sync(d)));
    }
  }
}
