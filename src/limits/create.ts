import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { MemoryCounterStore } from './memory-store.js';
import { RateLimiter } from './rate-limiter.js';
import type { CounterStore } from './store.js';

/** The Redis client is loaded only when configured: the embedded mode never pays for it. */
async function connectRedisStore(url: string, wait: boolean): Promise<CounterStore> {
  const { RedisCounterStore } = await import('./redis-store.js');
  return RedisCounterStore.connect(url, { wait });
}

/**
 * The rate limiter over the configured store: Redis when REDIS_URL is set, this process's
 * memory otherwise. The service and the CLI (which announces key and plan changes through it)
 * name the same keys. The service does not wait for Redis (`waitForRedis: false`): it starts,
 * answering 503 until Redis does; the CLI does, and fails if it cannot connect.
 */
export async function createRateLimiter(
  config: Config,
  clock: Clock,
  { waitForRedis }: { waitForRedis: boolean },
): Promise<RateLimiter> {
  const store = config.redisUrl
    ? await connectRedisStore(config.redisUrl, waitForRedis)
    : new MemoryCounterStore();
  return new RateLimiter(store, clock, {
    ...config.rateLimit,
    keyPrefix: `${config.redisKeyPrefix}rl:`,
  });
}
