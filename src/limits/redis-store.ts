import { Redis } from 'ioredis';
import type { CounterStore, HitInput, HitResult } from './store.js';

/**
 * KEYS: ban, then n counters, then n strike counters.
 * ARGV: n, ban threshold, ban ms, now ms, then limit and ttl ms for each counter.
 * Returns {outcome, ms of ban left or index of the full window, counts...}, outcome 1 allowed,
 * 0 limited, -1 banned. One script, so it is atomic across every instance sharing the server.
 * The ban holds its end time (read against the caller's clock, like the windows) and expires
 * from Redis by itself.
 */
const HIT_SCRIPT = `
local n = tonumber(ARGV[1])
local now = tonumber(ARGV[4])
local counts = {}
for i = 1, n do counts[i] = tonumber(redis.call('GET', KEYS[1 + i]) or '0') end
local bannedUntil = tonumber(redis.call('GET', KEYS[1]) or '0')
if bannedUntil > now then return {-1, bannedUntil - now, unpack(counts)} end
for i = 1, n do
  local limit = tonumber(ARGV[3 + 2 * i])
  local ttl = tonumber(ARGV[4 + 2 * i])
  if counts[i] >= limit then
    local strikes = redis.call('INCR', KEYS[1 + n + i])
    if strikes == 1 then redis.call('PEXPIRE', KEYS[1 + n + i], ttl) end
    if strikes > tonumber(ARGV[2]) then
      local banMs = tonumber(ARGV[3])
      redis.call('SET', KEYS[1], now + banMs, 'PX', banMs + 1000)
      return {-1, banMs, unpack(counts)}
    end
    return {0, i - 1, unpack(counts)}
  end
end
for i = 1, n do
  counts[i] = redis.call('INCR', KEYS[1 + i])
  if counts[i] == 1 then redis.call('PEXPIRE', KEYS[1 + i], tonumber(ARGV[4 + 2 * i])) end
end
return {1, 0, unpack(counts)}
`;

type HitCommand = (numKeys: number, ...args: Array<string | number>) => Promise<number[]>;

/** Counters in Redis, shared by every instance: the scale-out backend. */
export class RedisCounterStore implements CounterStore {
  readonly kind = 'redis';
  private closing: Promise<void> | undefined;

  private constructor(private readonly redis: Redis & { rateLimitHit: HitCommand }) {}

  /** Connects before returning, so the first request does not meet a cold client. */
  static async connect(url: string): Promise<RedisCounterStore> {
    const redis = new Redis(url, {
      lazyConnect: true,
      // Fail fast while disconnected instead of queueing: the caller decides open or closed.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2_000,
      // Reconnect forever, backing off to 2 s between tries, so Redis coming back is enough.
      retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
    });
    redis.defineCommand('rateLimitHit', { lua: HIT_SCRIPT });
    // Errors also reach callers through rejected commands; the listener only keeps an
    // unreachable server from crashing the process as an unhandled 'error' event.
    redis.on('error', () => {});
    try {
      await redis.connect();
    } catch (err) {
      redis.disconnect();
      throw err;
    }
    return new RedisCounterStore(redis as Redis & { rateLimitHit: HitCommand });
  }

  async hit(input: HitInput, nowMs: number): Promise<HitResult> {
    const n = input.counters.length;
    const keys = [input.banKey, ...input.counters.map((c) => c.key), ...input.strikeKeys];
    const args = [
      n,
      input.banThreshold,
      input.banMs,
      nowMs,
      ...input.counters.flatMap((c) => [c.limit, c.ttlMs]),
    ];
    const [outcome, extra, ...counts] = await this.redis.rateLimitHit(
      keys.length,
      ...keys,
      ...args,
    );
    if (outcome === 1) return { outcome: 'allowed', counts };
    if (outcome === 0) return { outcome: 'limited', counts, index: Number(extra) };
    return { outcome: 'banned', counts, banMsLeft: Number(extra) };
  }

  async read(keys: string[]): Promise<number[]> {
    const values = await this.redis.mget(...keys);
    return values.map((value) => Number(value ?? 0));
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  close(): Promise<void> {
    this.closing ??= this.redis.quit().then(
      () => undefined,
      () => this.redis.disconnect(),
    );
    return this.closing;
  }
}
