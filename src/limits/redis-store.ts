import { Redis } from 'ioredis';
import { randomBase62 } from '../domain/random.js';
import type { CounterStore, HitInput, HitResult } from './store.js';

/** A version key unused this long goes; the next request finds it missing and sets a new one. */
const VERSION_TTL_MS = 86_400_000;

/**
 * KEYS: ban, then n counters, then n strike counters, then (accounts) the keys and data
 * version keys.
 * ARGV: n, ban threshold, ban ms, now ms, the keys version expected ('' for none), a new
 * version for a version key that is missing, then limit and ttl ms for each counter.
 * Returns {outcome, ms of ban left or index of the full window, keys version, data version,
 * counts...}: outcome 1 allowed, 0 limited, -1 banned, 2 stale (the keys version was not the
 * one expected: nothing counted). One script, so it is atomic across every instance sharing
 * the server. The ban holds its end time (read against the caller's clock, like the windows)
 * and expires from Redis by itself. A missing version (never set, expired, or lost with a
 * restart) is set to the new one given, so nothing kept under an older one can match it.
 */
const HIT_SCRIPT = `
local n = tonumber(ARGV[1])
local now = tonumber(ARGV[4])
local keysVersion, dataVersion = false, false
if #KEYS > 1 + 2 * n then
  keysVersion = redis.call('GET', KEYS[2 + 2 * n])
  if not keysVersion then
    keysVersion = ARGV[6]
    redis.call('SET', KEYS[2 + 2 * n], keysVersion, 'PX', ${VERSION_TTL_MS})
  end
  dataVersion = redis.call('GET', KEYS[3 + 2 * n])
  if not dataVersion then
    dataVersion = ARGV[6]
    redis.call('SET', KEYS[3 + 2 * n], dataVersion, 'PX', ${VERSION_TTL_MS})
  end
  if ARGV[5] ~= '' and ARGV[5] ~= keysVersion then return {2, 0, keysVersion, dataVersion} end
end
local counts = {}
for i = 1, n do counts[i] = tonumber(redis.call('GET', KEYS[1 + i]) or '0') end
local bannedUntil = tonumber(redis.call('GET', KEYS[1]) or '0')
if bannedUntil > now then return {-1, bannedUntil - now, keysVersion, dataVersion, unpack(counts)} end
for i = 1, n do
  local limit = tonumber(ARGV[5 + 2 * i])
  local ttl = tonumber(ARGV[6 + 2 * i])
  if counts[i] >= limit then
    local strikes = redis.call('INCR', KEYS[1 + n + i])
    if strikes == 1 then redis.call('PEXPIRE', KEYS[1 + n + i], ttl) end
    if strikes > tonumber(ARGV[2]) then
      local banMs = tonumber(ARGV[3])
      redis.call('SET', KEYS[1], now + banMs, 'PX', banMs + 1000)
      return {-1, banMs, keysVersion, dataVersion, unpack(counts)}
    end
    return {0, i - 1, keysVersion, dataVersion, unpack(counts)}
  end
end
for i = 1, n do
  counts[i] = redis.call('INCR', KEYS[1 + i])
  if counts[i] == 1 then redis.call('PEXPIRE', KEYS[1 + i], tonumber(ARGV[6 + 2 * i])) end
end
return {1, 0, keysVersion, dataVersion, unpack(counts)}
`;

type HitCommand = (
  numKeys: number,
  ...args: Array<string | number>
) => Promise<Array<number | string | null>>;

/** This process's 96 random bits, then a count: a version never taken before, whatever
 * happened to the key (one random draw per process, not per request). */
const VERSION_PREFIX = randomBase62(16);
let versionsMade = 0;
function newVersion(): string {
  versionsMade += 1;
  return `${VERSION_PREFIX}.${versionsMade.toString(36)}`;
}

/** Counters in Redis, shared by every instance: the scale-out backend. */
export class RedisCounterStore implements CounterStore {
  readonly kind = 'redis';
  private closing: Promise<void> | undefined;
  private readonly inputs = new WeakMap<HitInput, { keys: string[]; limits: number[] }>();

  private constructor(private readonly redis: Redis & { rateLimitHit: HitCommand }) {}

  /** Connects before returning, so the first request does not meet a cold client. */
  static async connect(url: string): Promise<RedisCounterStore> {
    const redis = new Redis(url, {
      lazyConnect: true,
      // Fail fast while disconnected instead of queueing: the caller decides open or closed.
      enableOfflineQueue: false,
      // Commands issued in one turn of the event loop (a burst of requests' counts) go out in
      // one write, and their answers come back in one read.
      enableAutoPipelining: true,
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

  async hit(input: HitInput, nowMs: number, expectKeys = ''): Promise<HitResult> {
    const { keys, limits } = this.prepared(input);
    const [outcome, extra, keysVersion, dataVersion, ...counts] = await this.redis.rateLimitHit(
      keys.length,
      ...keys,
      input.counters.length,
      input.banThreshold,
      input.banMs,
      nowMs,
      expectKeys,
      newVersion(),
      ...limits,
    );
    const versions =
      typeof keysVersion === 'string' && typeof dataVersion === 'string'
        ? { versions: { keys: keysVersion, data: dataVersion } }
        : {};
    const numbers = counts.map(Number);
    if (outcome === 1) return { outcome: 'allowed', counts: numbers, ...versions };
    if (outcome === 0)
      return { outcome: 'limited', counts: numbers, index: Number(extra), ...versions };
    if (outcome === 2) return { outcome: 'stale', counts: [], ...versions };
    return { outcome: 'banned', counts: numbers, banMsLeft: Number(extra), ...versions };
  }

  /** The script's keys and counter arguments for a subject's input: built once per input (the
   * rate limiter reuses one for all of a subject's requests in the current windows). */
  private prepared(input: HitInput): { keys: string[]; limits: number[] } {
    let prepared = this.inputs.get(input);
    if (prepared === undefined) {
      prepared = {
        keys: [
          input.banKey,
          ...input.counters.map((c) => c.key),
          ...input.strikeKeys,
          ...(input.versionKeys ?? []),
        ],
        limits: input.counters.flatMap((c) => [c.limit, c.ttlMs]),
      };
      this.inputs.set(input, prepared);
    }
    return prepared;
  }

  /** A new random version: what was kept under the old one matches it no more. */
  async bump(versionKey: string): Promise<void> {
    await this.redis.set(versionKey, newVersion(), 'PX', VERSION_TTL_MS);
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
