import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Clock } from '../src/clock.js';
import { MemoryCounterStore } from '../src/limits/memory-store.js';
import { BAN_GRACE_MS, RateLimiter } from '../src/limits/rate-limiter.js';
import { RedisCounterStore } from '../src/limits/redis-store.js';
import type { CounterStore } from '../src/limits/store.js';
import {
  as,
  basic,
  errorCode,
  freshIp,
  newTenant,
  planAccount,
  startApp,
  type TestApp,
} from './helpers.js';

/** A clock the test moves by hand, starting a little after a UTC midnight. */
function manualClock(
  start = Date.UTC(2026, 10, 22, 0, 0, 5),
): Clock & { advance(ms: number): void; set(ms: number): void } {
  let now = start;
  return {
    now: () => new Date(now),
    advance: (ms) => {
      now += ms;
    },
    set: (ms) => {
      now = ms;
    },
  };
}

const MINUTE = 60_000;
const redisUrl = process.env.TEST_REDIS_URL;
const stores: Array<{ name: string; make: () => Promise<CounterStore> }> = [
  { name: 'memory', make: async () => new MemoryCounterStore() },
];
if (redisUrl)
  stores.push({ name: 'redis', make: () => RedisCounterStore.connect(redisUrl, { wait: true }) });

for (const backend of stores) {
  describe(`rate limiter on ${backend.name}`, () => {
    const opened: CounterStore[] = [];
    const limiterWith = async (
      clock: Clock,
      options: Partial<ConstructorParameters<typeof RateLimiter>[2]> = {},
    ) => {
      const store = await backend.make();
      opened.push(store);
      return new RateLimiter(store, clock, {
        banThreshold: 20,
        banSeconds: 900,
        keyPrefix: `test-${randomUUID()}:`,
        ...options,
      });
    };
    after(async () => {
      for (const store of opened) await store.close();
    });
    const subject = () => ({ id: `acct_${randomUUID()}`, banId: `key_${randomUUID()}` });

    it('accepts exactly the limit in a minute, counts down, refuses the next, refills', async () => {
      const clock = manualClock();
      const limiter = await limiterWith(clock);
      const who = subject();
      const limits = { perMinute: 60, perDay: 1000 };
      for (let i = 1; i <= 60; i++) {
        const d = await limiter.check(who, limits);
        assert.equal(d.allowed, true, `request ${i}`);
        assert.equal(d.tightest.name, 'minute');
        assert.equal(d.tightest.remaining, 60 - i);
      }
      const refused = await limiter.check(who, limits);
      assert.equal(refused.allowed, false);
      assert.equal(refused.refusal, 'rate_limited');
      assert.equal(refused.retryAfter, 55); // the clock stands 5 s into the minute
      assert.equal(refused.tightest.resetAt * 1000, Date.UTC(2026, 10, 22, 0, 1, 0));
      // Refused requests count in neither window.
      assert.equal(refused.windows.find((w) => w.name === 'day')?.used, 60);

      clock.advance(55_000);
      const next = await limiter.check(who, limits);
      assert.equal(next.allowed, true);
      assert.equal(next.windows.find((w) => w.name === 'minute')?.used, 1);
      assert.equal(next.windows.find((w) => w.name === 'day')?.used, 61);
    });

    it('binds on the day window when it is the tighter one', async () => {
      const clock = manualClock();
      const limiter = await limiterWith(clock);
      const who = subject();
      const limits = { perMinute: 1000, perDay: 5 };
      for (let i = 0; i < 5; i++) {
        assert.equal((await limiter.check(who, limits)).allowed, true);
        clock.advance(MINUTE); // a new minute each time: only the day can bind
      }
      const refused = await limiter.check(who, limits);
      assert.equal(refused.allowed, false);
      assert.equal(refused.tightest.name, 'day');
      assert.equal(refused.tightest.limit, 5);
      assert.equal(refused.tightest.resetAt * 1000, Date.UTC(2026, 10, 23));
      assert.equal(
        refused.retryAfter,
        Math.ceil((Date.UTC(2026, 10, 23) - clock.now().getTime()) / 1000),
      );
    });

    it('bans a key after more than 20 refused requests in a window, and lifts the ban', async () => {
      const clock = manualClock();
      const limiter = await limiterWith(clock);
      const who = subject();
      const limits = { perMinute: 2, perDay: 1000 };
      await limiter.check(who, limits);
      await limiter.check(who, limits);
      // The window's first refusal; its client needs a moment to see it (BAN_GRACE_MS).
      assert.equal((await limiter.check(who, limits)).refusal, 'rate_limited');
      clock.advance(BAN_GRACE_MS);
      for (let i = 1; i <= 20; i++) {
        assert.equal((await limiter.check(who, limits)).refusal, 'rate_limited', `refusal ${i}`);
      }
      const banned = await limiter.check(who, limits);
      assert.equal(banned.refusal, 'key_banned');
      assert.equal(banned.retryAfter, 900);
      // The request that began the ban says so (it is logged once); the ones after do not.
      assert.deepEqual(banned.banStarted, { untilMs: clock.now().getTime() + 15 * MINUTE });

      clock.advance(MINUTE); // the minute refilled, the ban still holds
      const still = await limiter.check(who, limits);
      assert.equal(still.refusal, 'key_banned');
      assert.equal(still.retryAfter, 840);
      assert.equal(still.banStarted, undefined);
      // Another key of the same account is not banned (the budget is shared, the ban is not).
      const sibling = await limiter.check({ id: who.id, banId: `key_${randomUUID()}` }, limits);
      assert.equal(sibling.allowed, true);

      clock.advance(14 * MINUTE);
      assert.equal((await limiter.check(who, limits)).allowed, true);
    });

    it('accepts exactly 50 of 200 concurrent requests against a limit of 50', async () => {
      const limiter = await limiterWith(manualClock());
      const who = subject();
      const decisions = await Promise.all(
        Array.from({ length: 200 }, () => limiter.check(who, { perMinute: 50, perDay: 1000 })),
      );
      const allowed = decisions.filter((d) => d.allowed);
      assert.equal(allowed.length, 50);
      // Each accepted request is told its own count, as if counted alone in arrival order
      // (Redis counts the requests of one turn together); the refused ones, the full window.
      const used = decisions.slice(0, 50).map((d) => d.windows[0]?.used);
      assert.deepEqual(
        used,
        Array.from({ length: 50 }, (_, i) => i + 1),
      );
      assert.deepEqual(
        decisions.slice(0, 50).map((d) => d.allowed),
        Array(50).fill(true),
        'the first 50 to arrive are the ones accepted',
      );
      // All were sent before their client could see a 429: no strikes, no ban.
      const refusals = decisions.filter((d) => !d.allowed).map((d) => d.refusal);
      assert.deepEqual(refusals, Array(150).fill('rate_limited'));
      for (const d of decisions.filter((d) => !d.allowed)) assert.equal(d.windows[0]?.used, 50);
    });

    it('counts no strikes in the grace after the first refusal; a client that goes on is banned', async () => {
      const clock = manualClock();
      const limiter = await limiterWith(clock);
      const who = subject();
      const limits = { perMinute: 5, perDay: 1000 };
      // Two processes on one key, 45 calls each at once: 5 accepted, 85 refused, no ban.
      const first = await Promise.all(Array.from({ length: 90 }, () => limiter.check(who, limits)));
      assert.equal(first.filter((d) => d.allowed).length, 5);
      assert.ok(first.every((d) => d.allowed || d.refusal === 'rate_limited'));
      clock.advance(BAN_GRACE_MS - 1);
      const late = await Promise.all(Array.from({ length: 40 }, () => limiter.check(who, limits)));
      assert.ok(
        late.every((d) => d.refusal === 'rate_limited'),
        'still in the grace',
      );
      // Past the grace, refusals are strikes again: past 20 of them, the key is banned.
      clock.advance(1);
      const after = await Promise.all(Array.from({ length: 21 }, () => limiter.check(who, limits)));
      assert.deepEqual(
        after.map((d) => d.refusal),
        [...Array(20).fill('rate_limited'), 'key_banned'],
      );
      assert.equal((await limiter.check(who, limits)).refusal, 'key_banned');
    });

    it('refills when a short window ends', async () => {
      // A held clock at a window's start: all four calls land in one window, with no wait.
      const clock = manualClock(Date.UTC(2026, 10, 22, 0, 0, 5));
      const limiter = await limiterWith(clock, { windowSeconds: { minute: 1, day: 86_400 } });
      const who = subject();
      const limits = { perMinute: 3, perDay: 1000 };
      for (let i = 0; i < 3; i++) assert.equal((await limiter.check(who, limits)).allowed, true);
      clock.advance(999);
      const refused = await limiter.check(who, limits);
      assert.equal(refused.allowed, false);
      assert.equal(refused.retryAfter, 1);
      clock.advance(1);
      assert.equal((await limiter.check(who, limits)).allowed, true);
    });

    if (backend.name === 'redis') {
      it('shares one budget between two instances', async () => {
        const clock = manualClock();
        const prefix = `test-${randomUUID()}:`;
        const a = await limiterWith(clock, { keyPrefix: prefix });
        const b = await limiterWith(clock, { keyPrefix: prefix });
        const who = subject();
        const limits = { perMinute: 30, perDay: 1000 };
        const decisions = await Promise.all(
          Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).check(who, limits)),
        );
        assert.equal(decisions.filter((d) => d.allowed).length, 30);
      });
    }
  });
}

describe('rate limits over HTTP', () => {
  let t: TestApp;
  const clock = manualClock();
  let logged = '';
  before(async () => {
    const logStream = {
      write: (line: string) => {
        logged += line;
      },
    };
    t = await startApp({ clock, env: { LOG_LEVEL: 'warn' }, logStream });
  });
  after(() => t.close());

  it('sends the headers, counts 59…0, answers 429 with Retry-After, then refills', async () => {
    const tenant = await newTenant(t.app, { plan: 'free' });
    clock.advance(MINUTE); // a fresh minute: the key creation counted in the previous one
    const resetAt = Math.floor(clock.now().getTime() / MINUTE + 1) * 60;
    for (let i = 1; i <= 60; i++) {
      const res = await as(t.app, tenant, { method: 'GET', url: '/v1/pets' });
      assert.equal(res.statusCode, 200, `request ${i}`);
      assert.equal(res.headers['x-ratelimit-limit'], '60');
      assert.equal(res.headers['x-ratelimit-remaining'], String(60 - i));
      assert.equal(res.headers['x-ratelimit-reset'], String(resetAt));
      assert.equal(res.headers['ratelimit-policy'], '"minute";q=60;w=60, "day";q=1000;w=86400');
      assert.match(String(res.headers.ratelimit), new RegExp(`^"minute";r=${60 - i};t=\\d+$`));
    }
    const refused = await as(t.app, tenant, { method: 'GET', url: '/v1/pets' });
    assert.equal(refused.statusCode, 429);
    assert.equal(errorCode(refused), 'rate_limited');
    assert.match(refused.json().message, /60 requests per minute/);
    assert.equal(refused.headers['retry-after'], String(resetAt - clock.now().getTime() / 1000));
    assert.equal(refused.headers['x-ratelimit-remaining'], '0');

    clock.advance(MINUTE);
    const again = await as(t.app, tenant, { method: 'GET', url: '/v1/pets' });
    assert.equal(again.statusCode, 200);
    assert.equal(again.headers['x-ratelimit-remaining'], '59');
  });

  it('puts the headers on errors, on key management and on sign-up too', async () => {
    const tenant = await newTenant(t.app, { plan: 'free' });
    const responses = [
      await as(t.app, tenant, { method: 'GET', url: '/v1/pets/999999999' }),
      await as(t.app, tenant, { method: 'POST', url: '/v1/pets', payload: { name: 1 } }),
      await as(t.app, tenant, { method: 'GET', url: '/v1/account' }),
      await t.app.inject({
        method: 'GET',
        url: '/v1/keys',
        headers: { authorization: basic(tenant.email, tenant.password) },
      }),
      await t.app.inject({ method: 'GET', url: '/v1/pets', remoteAddress: freshIp() }),
      await t.app.inject({
        method: 'POST',
        url: '/v1/accounts',
        payload: { email: 'not-an-email' },
        remoteAddress: freshIp(),
      }),
    ];
    assert.deepEqual(
      responses.map((r) => r.statusCode),
      [404, 400, 200, 200, 401, 400],
    );
    for (const res of responses) {
      assert.match(String(res.headers['x-ratelimit-limit']), /^\d+$/, res.body);
      assert.match(String(res.headers['x-ratelimit-remaining']), /^\d+$/);
      assert.match(String(res.headers['x-ratelimit-reset']), /^\d+$/);
    }
  });

  it('limits requests without a valid key per client IP, with the Free numbers', async () => {
    const ip = freshIp();
    for (let i = 1; i <= 60; i++) {
      const res = await t.app.inject({
        url: '/v1/pets',
        headers: { authorization: `Bearer as_test_${'x'.repeat(40)}` },
        remoteAddress: ip,
      });
      assert.equal(res.statusCode, 401, `request ${i}`);
      assert.equal(res.headers['x-ratelimit-remaining'], String(60 - i));
    }
    const guessing = await t.app.inject({
      url: '/v1/pets',
      headers: { authorization: `Bearer as_test_${'y'.repeat(40)}` },
      remoteAddress: ip,
    });
    assert.equal(guessing.statusCode, 429);
    assert.equal(errorCode(guessing), 'rate_limited');
    // Another address is not affected.
    const other = await t.app.inject({ url: '/v1/pets', remoteAddress: freshIp() });
    assert.equal(other.statusCode, 401);
  });

  it('bans a key that keeps sending while limited, with key_banned and Retry-After', async () => {
    const tenant = await newTenant(t.app, { plan: 'free' });
    await planAccount(t.app, tenant.accountId, 'enterprise', { perMinute: 1, perDay: 1000 });
    clock.advance(MINUTE);
    assert.equal((await as(t.app, tenant, { method: 'GET', url: '/v1/account' })).statusCode, 200);
    // The first refusal, and those sent before it could be seen, are no strikes.
    assert.equal(errorCode(await as(t.app, tenant, { url: '/v1/pets' })), 'rate_limited');
    clock.advance(BAN_GRACE_MS);
    for (let i = 1; i <= 20; i++) {
      const res = await as(t.app, tenant, { method: 'GET', url: '/v1/pets' });
      assert.equal(errorCode(res), 'rate_limited', `refusal ${i}`);
    }
    const banned = await as(t.app, tenant, { method: 'GET', url: '/v1/pets' });
    assert.equal(banned.statusCode, 429);
    assert.equal(errorCode(banned), 'key_banned');
    assert.equal(banned.headers['retry-after'], '900');
    // The ban's start is logged once, naming the key by id and when the ban ends.
    const bans = logged
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.subject === tenant.accountId);
    assert.equal(bans.length, 1, JSON.stringify(bans));
    assert.equal(bans[0]?.bannedId, tenant.keyId);
    assert.equal(bans[0]?.until, new Date(clock.now().getTime() + 15 * MINUTE).toISOString());
    assert.match(String(bans[0]?.msg), /is banned until .* for sending while rate limited/);
    assert.ok(!logged.includes(tenant.key), 'no secret in the log');
    clock.advance(15 * MINUTE);
    assert.equal((await as(t.app, tenant, { method: 'GET', url: '/v1/pets' })).statusCode, 200);
  });

  it("counts an account's keys against one budget, and bans only the key that keeps sending", async () => {
    const tenant = await newTenant(t.app, { plan: 'free' });
    const second = await t.app.inject({
      method: 'POST',
      url: '/v1/keys',
      headers: { authorization: basic(tenant.email, tenant.password) },
      payload: { name: 'second' },
    });
    assert.equal(second.statusCode, 201);
    const other = { ...tenant, headers: { authorization: `Bearer ${second.json().key}` } };
    await planAccount(t.app, tenant.accountId, 'enterprise', { perMinute: 10, perDay: 1000 });
    clock.advance(MINUTE);
    // Side by side, the two keys share the account's 10 requests, counted down as one.
    for (let i = 1; i <= 10; i++) {
      const res = await as(t.app, i % 2 ? tenant : other, { method: 'GET', url: '/v1/pets' });
      assert.equal(res.statusCode, 200, `request ${i}`);
      assert.equal(res.headers['x-ratelimit-remaining'], String(10 - i));
    }
    assert.equal(errorCode(await as(t.app, tenant, { url: '/v1/pets' })), 'rate_limited');
    clock.advance(BAN_GRACE_MS);
    for (let i = 1; i <= 20; i++) {
      const res = await as(t.app, tenant, { method: 'GET', url: '/v1/pets' });
      assert.equal(errorCode(res), 'rate_limited', `refusal ${i}`);
    }
    assert.equal(
      errorCode(await as(t.app, tenant, { method: 'GET', url: '/v1/pets' })),
      'key_banned',
    );
    // The other key is limited with its account, not banned with the first key.
    assert.equal(
      errorCode(await as(t.app, other, { method: 'GET', url: '/v1/pets' })),
      'rate_limited',
    );
  });

  it('applies a plan change from the next request on', async () => {
    const tenant = await newTenant(t.app, { plan: 'free' });
    const before = await as(t.app, tenant, { method: 'GET', url: '/v1/pets' });
    assert.equal(before.headers['x-ratelimit-limit'], '60');
    await planAccount(t.app, tenant.accountId, 'pro');
    const after = await as(t.app, tenant, { method: 'GET', url: '/v1/account' });
    assert.equal(after.headers['x-ratelimit-limit'], '300');
    assert.deepEqual(after.json().limits, { perMinute: 300, perDay: 10000 });
  });

  it('binds on the day window over HTTP for enterprise with per-day 5', async () => {
    const tenant = await newTenant(t.app, { plan: 'free' });
    await planAccount(t.app, tenant.accountId, 'enterprise', { perMinute: 1000, perDay: 5 });
    clock.set(Math.ceil(clock.now().getTime() / 86_400_000) * 86_400_000 + 1000); // a new UTC day
    for (let i = 1; i <= 5; i++) {
      const res = await as(t.app, tenant, { method: 'GET', url: '/v1/pets' });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['x-ratelimit-limit'], '5');
      assert.equal(res.headers['x-ratelimit-remaining'], String(5 - i));
    }
    const refused = await as(t.app, tenant, { method: 'GET', url: '/v1/pets' });
    assert.equal(refused.statusCode, 429);
    assert.match(refused.json().message, /5 requests per day/);
    assert.equal(Number(refused.headers['x-ratelimit-reset']) % 86_400, 0);
  });

  it('accepts exactly 50 of 200 concurrent requests', async () => {
    const tenant = await newTenant(t.app, { plan: 'free' });
    await planAccount(t.app, tenant.accountId, 'enterprise', { perMinute: 50, perDay: 100_000 });
    clock.advance(MINUTE);
    const results = await Promise.all(
      Array.from({ length: 200 }, () => as(t.app, tenant, { method: 'GET', url: '/v1/pets' })),
    );
    assert.equal(results.filter((r) => r.statusCode === 200).length, 50);
    assert.equal(results.filter((r) => r.statusCode === 429).length, 150);
  });
});

if (redisUrl) {
  describe('two app instances on one Redis', () => {
    let a: TestApp;
    let b: TestApp;
    const prefix = `test-${randomUUID()}:`;
    // One standing clock for both, so the count never straddles a minute boundary.
    const now = new Date();
    const clock = { now: () => now };
    before(async () => {
      a = await startApp({ clock, env: { REDIS_KEY_PREFIX: prefix } });
      // The second instance shares the first one's database, like two processes would.
      b = await startApp({
        clock,
        env: { REDIS_KEY_PREFIX: prefix, DATABASE_URL: a.databaseUrl },
      });
    });
    after(async () => {
      await b.close();
      await a.close();
    });

    it('share one account budget: together they accept exactly the limit', async () => {
      const tenant = await newTenant(a.app, { plan: 'free' });
      await planAccount(a.app, tenant.accountId, 'enterprise', { perMinute: 40, perDay: 1000 });
      // Alternating instances: each alone would accept 40, together they must stop at 40.
      const results = [];
      for (let i = 0; i < 100; i++) {
        results.push(await as((i % 2 ? a : b).app, tenant, { method: 'GET', url: '/v1/account' }));
      }
      assert.ok(results.some((r, i) => i % 2 === 0 && r.statusCode === 200));
      assert.ok(results.some((r, i) => i % 2 === 1 && r.statusCode === 200));
      const accepted = results.filter((r) => r.statusCode === 200).length;
      // The key creation (HTTP Basic, in the same minute) counted too.
      assert.equal(accepted, 39);
      assert.ok(results.every((r) => r.statusCode === 200 || r.statusCode === 429));
    });
  });
}

/** A free loopback port for a private redis-server. */
