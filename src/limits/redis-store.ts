import { Redis } from 'ioredis';
import { randomBase62 } from '../domain/random.js';
import type { CounterStore, HitInput, HitResult } from './store.js';

/** A version key lives this long after it was last set (moved on, or set anew when missing);
 * the next request then finds it missing and sets a new one. */
const VERSION_TTL_MS = 86_400_000;

/**
 * Counts a batch of m requests of one subject (those of one turn of the event loop).
 * KEYS: ban, then n counters, then n strike counters, then n first-refusal times, then
 * (accounts) the version keys: the keys version, then the others (data, appends).
 * ARGV: n, ban threshold, ban ms, now ms, the keys version expected ('' for none), a new
 * version for a version key that is missing, m, ban grace ms, then limit and ttl ms for each
 * counter.
 * Returns {outcome, ban ms left, keys version, data version, appends version, accepted, full
 * window, strikes, counts before...}: the first `accepted` requests are counted; outcome 1 all
 * of them; 0 the rest are refused, each a strike on the first full window (its index; `strikes`
 * after them; -1 when refused in the grace after the window's first refusal, and so no
 * strikes), and those past the ban threshold start a ban; -1 all were refused by a ban
 * already running;
 * 2 stale (the keys version was not the one expected: nothing counted). One script, so
 * it is atomic across every instance sharing the server. The ban holds its end time (read
 * against the caller's clock, like the windows) and expires from Redis by itself. A missing
 * version (never set, expired, or lost with a restart) is set to the new one given, so nothing
 * kept under an older one can match it.
 */
const HIT_SCRIPT = `
local n = tonumber(ARGV[1])
local now = tonumber(ARGV[4])
local m = tonumber(ARGV[7])
local versions = {}
for i = 2 + 3 * n, #KEYS do
  local version = redis.call('GET', KEYS[i])
  if not version then
    version = ARGV[6]
    redis.call('SET', KEYS[i], version, 'PX', ${VERSION_TTL_MS})
  end
  versions[#versions + 1] = version
end
-- false, not nil: a nil would end the reply's array there.
local keysVersion, dataVersion, appendsVersion = versions[1] or false, versions[2] or false, versions[3] or false
if keysVersion and ARGV[5] ~= '' and ARGV[5] ~= keysVersion then
  return {2, 0, keysVersion, dataVersion, appendsVersion, 0, 0, 0}
end
local counts = {}
for i = 1, n do counts[i] = tonumber(redis.call('GET', KEYS[1 + i]) or '0') end
local bannedUntil = tonumber(redis.call('GET', KEYS[1]) or '0')
if bannedUntil > now then
  return {-1, bannedUntil - now, keysVersion, dataVersion, appendsVersion, 0, 0, 0, unpack(counts)}
end
local accepted = m
for i = 1, n do accepted = math.min(accepted, math.max(tonumber(ARGV[7 + 2 * i]) - counts[i], 0)) end
if accepted > 0 then
  for i = 1, n do
    if redis.call('INCRBY', KEYS[1 + i], accepted) == accepted then
      redis.call('PEXPIRE', KEYS[1 + i], tonumber(ARGV[8 + 2 * i]))
    end
  end
end
if accepted == m then return {1, 0, keysVersion, dataVersion, appendsVersion, accepted, 0, 0, unpack(counts)} end
local full = 1
while math.max(tonumber(ARGV[7 + 2 * full]) - counts[full], 0) > accepted do full = full + 1 end
local refused = m - accepted
local ttl = tonumber(ARGV[8 + 2 * full])
local since = tonumber(redis.call('GET', KEYS[1 + 2 * n + full]) or '-1')
if since < 0 then
  since = now
  redis.call('SET', KEYS[1 + 2 * n + full], now, 'PX', ttl)
end
-- In the grace after the window's first refusal, refusals are no strikes (strikes -1 says so).
if now - since < tonumber(ARGV[8]) then
  return {0, 0, keysVersion, dataVersion, appendsVersion, accepted, full - 1, -1, unpack(counts)}
end
local strikes = redis.call('INCRBY', KEYS[1 + n + full], refused)
if strikes == refused then redis.call('PEXPIRE', KEYS[1 + n + full], ttl) end
local banMs = 0
if strikes > tonumber(ARGV[2]) then
  banMs = tonumber(ARGV[3])
  redis.call('SET', KEYS[1], now + banMs, 'PX', banMs + 1000)
end
return {0, banMs, keysVersion, dataVersion, appendsVersion, accepted, full - 1, strikes, unpack(counts)}
`;

type HitReply = Array<number | string | null>;
type HitCommand = (numKeys: number, ...args: Array<string | number>) => Promise<HitReply>;

/** The requests of one subject waiting to be counted together. */
interface Batch {
  nowMs: number;
  waiting: Array<{ resolve: (result: HitResult) => void; reject: (err: unknown) => void }>;
}

/** Counters in Redis, shared by every instance: the scale-out backend. */
export class RedisCounterStore implements CounterStore {
  readonly kind = 'redis';
  private closing: Promise<void> | undefined;
  private readonly inputs = new WeakMap<HitInput, { keys: string[]; limits: number[] }>();
  private batches = new Map<HitInput, Map<string, Batch>>();
  private flushScheduled = false;
  /** The connection's last error, if any. */
  private lastError: Error | undefined;
  /** This store's 96 random bits, then a count: a version never taken before, whatever
   * happened to the key (one random draw per store, not per request). */
  private readonly versionPrefix = randomBase62(16);
  private versionsMade = 0;

  private constructor(private readonly redis: Redis & { rateLimitHit: HitCommand }) {}

  private newVersion(): string {
    this.versionsMade += 1;
    return `${this.versionPrefix}.${this.versionsMade.toString(36)}`;
  }

  /**
   * A store on the Redis at `url`. The connection is made in the background and made again
   * whenever it drops, backing off to 2 s between tries, so Redis may start after the service
   * or restart under it: meanwhile commands fail at once (the caller answers 503, or lets
   * requests through) rather than queue. With `wait`, resolves only once connected and
   * rejects if the first try fails (the CLI, which runs one command and leaves).
   */
  static async connect(url: string, { wait }: { wait: boolean }): Promise<RedisCounterStore> {
    const redis = new Redis(url, {
      lazyConnect: wait,
      // Fail fast while disconnected instead of queueing: the caller decides open or closed.
      enableOfflineQueue: false,
      // No auto-pipelining: hit() already counts a turn's requests of one account in one call
      // (docs/decisions/0025-redis-counts-a-turn.md).
      enableAutoPipelining: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2_000,
      retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
    });
    redis.defineCommand('rateLimitHit', { lua: HIT_SCRIPT });
    const store = new RedisCounterStore(redis as Redis & { rateLimitHit: HitCommand });
    // Errors also reach callers through rejected commands; the listener keeps an unreachable
    // server from crashing the process as an unhandled 'error' event, and the last one says
    // why the store is not connected (ping).
    redis.on('error', (err: Error) => {
      store.lastError = err;
    });
    if (wait) {
      try {
        await redis.connect();
      } catch (err) {
        redis.disconnect();
        throw err;
      }
    }
    return store;
  }

  /**
   * Counts one request. The requests of one subject (and one expected keys version) that
   * arrive in one turn of the event loop are counted together, in one script call: under load
   * from one account, one round trip serves many requests, each answered as if counted alone
   * in arrival order.
   */
  hit(input: HitInput, nowMs: number, expectKeys = ''): Promise<HitResult> {
    return new Promise((resolve, reject) => {
      let byExpected = this.batches.get(input);
      if (byExpected === undefined) {
        byExpected = new Map();
        this.batches.set(input, byExpected);
      }
      let batch = byExpected.get(expectKeys);
      if (batch === undefined) {
        batch = { nowMs, waiting: [] };
        byExpected.set(expectKeys, batch);
      }
      batch.nowMs = Math.max(batch.nowMs, nowMs);
      batch.waiting.push({ resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.flushScheduled = false;
    const batches = this.batches;
    this.batches = new Map();
    for (const [input, byExpected] of batches) {
      for (const [expectKeys, batch] of byExpected) void this.send(input, expectKeys, batch);
    }
  }

  private async send(input: HitInput, expectKeys: string, batch: Batch): Promise<void> {
    const { waiting } = batch;
    let reply: HitReply;
    try {
      const { keys, limits } = this.prepared(input);
      reply = await this.redis.rateLimitHit(
        keys.length,
        ...keys,
        input.counters.length,
        input.banThreshold,
        input.banMs,
        batch.nowMs,
        expectKeys,
        this.newVersion(),
        waiting.length,
        input.banGraceMs,
        ...limits,
      );
    } catch (err) {
      for (const { reject } of waiting) reject(err);
      return;
    }
    const [outcome, banMs, keysVersion, dataVersion, appendsVersion, accepted, full, strikes] =
      reply;
    const before = reply.slice(8);
    const versions =
      typeof keysVersion === 'string' &&
      typeof dataVersion === 'string' &&
      typeof appendsVersion === 'string'
        ? { keys: keysVersion, data: dataVersion, appends: appendsVersion }
        : undefined;
    const counts = before.map(Number);
    const counted = Number(accepted);
    // The strikes the refused requests of this batch took, the first of them being this one.
    const firstStrike = Number(strikes) - (waiting.length - counted) + 1;
    waiting.forEach(({ resolve, reject }, i) => {
      const after = counts.map((c) => c + Math.min(i + 1, counted));
      if (outcome === 2) {
        // The script sets missing versions before it compares: a stale answer carries all.
        if (versions) resolve({ outcome: 'stale', versions });
        else reject(new Error('rate-limit script: stale without versions'));
      } else if (outcome === -1) {
        resolve({ outcome: 'banned', counts, banMsLeft: Number(banMs), versions });
      } else if (i < counted) resolve({ outcome: 'allowed', counts: after, versions });
      else if (Number(strikes) < 0) {
        resolve({ outcome: 'limited', counts: after, index: Number(full), versions });
      } else if (firstStrike + (i - counted) > input.banThreshold) {
        const started = firstStrike + (i - counted) === input.banThreshold + 1;
        resolve({ outcome: 'banned', counts: after, banMsLeft: Number(banMs), versions, started });
      } else resolve({ outcome: 'limited', counts: after, index: Number(full), versions });
    });
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
          ...input.sinceKeys,
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
    await this.redis.set(versionKey, this.newVersion(), 'PX', VERSION_TTL_MS);
  }

  async read(keys: string[]): Promise<number[]> {
    const values = await this.redis.mget(...keys);
    return values.map((value) => Number(value ?? 0));
  }

  /** A ban key holds the time its ban ends (ms), as the counting script sets it. */
  async banEnds(banKeys: string[], nowMs: number): Promise<Array<number | undefined>> {
    if (banKeys.length === 0) return [];
    const values = await this.redis.mget(...banKeys);
    return values.map((value) => {
      const until = Number(value ?? 0);
      return until > nowMs ? until : undefined;
    });
  }

  /** Answers once Redis does. While a connection is being made, waits for it (the caller
   * bounds the wait); while none can be, fails with why (a command would only say that the
   * stream is not writeable). */
  async ping(): Promise<void> {
    // Between two tries (up to 2 s apart), the last try's error is the answer: a refused
    // connection is said as such, not as a timeout.
    if (this.redis.status === 'reconnecting' && this.lastError) throw this.lastError;
    if (this.redis.status !== 'ready') await this.connected();
    await this.redis.ping();
  }

  /** The connection's next outcome: ready, or the error of its next try. */
  private connected(): Promise<void> {
    const { redis } = this;
    if (redis.status === 'end') {
      return Promise.reject(this.lastError ?? new Error('the Redis connection is closed'));
    }
    return new Promise((resolve, reject) => {
      const settle = (err?: Error) => {
        redis.off('ready', settle);
        redis.off('error', settle);
        redis.off('end', ended);
        if (err) reject(err);
        else resolve();
      };
      const ended = () => settle(new Error('the Redis connection is closed'));
      redis.on('ready', settle);
      redis.on('error', settle);
      redis.on('end', ended);
    });
  }

  close(): Promise<void> {
    // Not connected: nothing to send first, and QUIT would wait for a connection that may
    // never come (a Redis that never answered).
    if (this.redis.status !== 'ready') {
      this.redis.disconnect();
      this.closing ??= Promise.resolve();
    }
    this.closing ??= this.redis.quit().then(
      () => undefined,
      () => this.redis.disconnect(),
    );
    return this.closing;
  }
}
