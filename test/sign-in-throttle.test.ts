/**
 * Password guessing is cut off before the hash (src/http/sign-in-throttle.ts): over real HTTP
 * from many loopback addresses (Linux routes all of 127/8 to lo, and the app trusts no proxy,
 * so each socket's address is the client's), on the API's HTTP Basic and the portal alike.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { Passwords } from '../src/domain/passwords.js';
import { fail, ok } from '../src/domain/result.js';
import { clientSubject } from '../src/http/auth.js';
import {
  ADDRESS_FAILURE_LIMITS,
  EMAIL_ADDRESS_FAILURE_LIMITS,
  EMAIL_FAILURE_LIMITS,
  SignInThrottle,
} from '../src/http/sign-in-throttle.js';
import { MemoryCounterStore } from '../src/limits/memory-store.js';
import { RateLimiter } from '../src/limits/rate-limiter.js';
import { createLog } from '../src/log.js';
import { Outages } from '../src/ops/outages.js';
import { basic, CHEAP_HASHES, errorCode, newTenant, startApp, type TestApp } from './helpers.js';
import { Visitor } from './portal-visitor.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request from the socket address `from` (127.x.y.z), on a connection of its own. */
function send(
  base: string,
  from: string,
  authorization: string,
  method: 'GET' | 'POST' = 'GET',
): Promise<Answer> {
  const url = new URL('/v1/keys', base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method,
        localAddress: from,
        agent: false,
        headers: {
          authorization,
          ...(method === 'POST' && { 'content-type': 'application/json' }),
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(method === 'POST' ? '{}' : undefined);
  });
}

/** `count` loopback addresses of a block of their own (127.0.<block>.2 …). */
function addresses(block: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `127.0.${block}.${i + 2}`);
}

const WRONG = 'not the password at all';

/** A 429 in our Error shape with a Retry-After. */
function assertCutOff(res: Answer, what: string): void {
  assert.equal(res.status, 429, `${what}: ${res.body}`);
  const body = JSON.parse(res.body) as { code: string; message: string; status: number };
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status']);
  assert.equal(body.code, 'rate_limited');
  assert.equal(body.status, 429);
  assert.ok(Number(res.headers['retry-after']) >= 1, `${what}: Retry-After`);
}

/** The app's hasher, at the test suites' cost, counting the passwords it checks. */
class CountingPasswords extends Passwords {
  checked = 0;
  override verify(password: string, stored: string | undefined): Promise<boolean> {
    this.checked++;
    return super.verify(password, stored);
  }
}

describe('password guessing over HTTP Basic', () => {
  let t: TestApp;
  let base: string;
  const passwords = new CountingPasswords(Number(CHEAP_HASHES.PASSWORD_HASH_COST));
  // Mid-minute and fixed: no window turns while a test counts.
  const now = Math.floor(Date.now() / 60_000) * 60_000 + 30_000;
  before(async () => {
    t = await startApp({ clock: { now: () => new Date(now) }, passwords });
    base = await t.app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(() => t.close());

  it('cuts one address off within 20 tries, and then refuses the right password too', async () => {
    const tenant = await newTenant(t.app);
    const [guesser, other] = addresses(1, 2) as [string, string];
    let wrong = 0;
    let last: Answer | undefined;
    for (let i = 0; i < 20; i++) {
      last = await send(base, guesser, basic(tenant.email, `${WRONG} ${i}`));
      if (last.status !== 401) break;
      wrong++;
    }
    assert.equal(wrong, EMAIL_ADDRESS_FAILURE_LIMITS.perMinute);
    assertCutOff(last as Answer, 'the next guess');
    const right = basic(tenant.email, tenant.password);
    assertCutOff(await send(base, guesser, right), 'the right password');
    assertCutOff(await send(base, guesser, right, 'POST'), 'the right password, creating a key');
    // Another address, with fewer failures in all than the email's own limit, signs in.
    assert.equal((await send(base, other, right)).status, 200);
  });

  it('cuts 40 addresses off within 20 tries in all, the right password included', async () => {
    const tenant = await newTenant(t.app);
    const guessers = addresses(2, 40);
    const statuses: number[] = [];
    for (const [i, from] of guessers.entries()) {
      statuses.push((await send(base, from, basic(tenant.email, `${WRONG} ${i}`))).status);
    }
    const tries = statuses.indexOf(429);
    assert.ok(tries > 0 && tries <= 20, `cut off after ${tries} tries`);
    assert.equal(tries, EMAIL_FAILURE_LIMITS.perMinute);
    assert.deepEqual(
      statuses.slice(tries),
      guessers.slice(tries).map(() => 429),
    );
    // Every one of them, and an address that never guessed, is refused the right password.
    for (const from of [...guessers, '127.0.2.200']) {
      assertCutOff(await send(base, from, basic(tenant.email, tenant.password)), from);
    }
  });

  it('lets no burst through: of 40 guesses at once, at most the limit is checked', async () => {
    const tenant = await newTenant(t.app);
    const answers = await Promise.all(
      addresses(3, 40).map((from, i) => send(base, from, basic(tenant.email, `${WRONG} ${i}`))),
    );
    const checked = answers.filter((res) => res.status === 401).length;
    assert.ok(checked <= EMAIL_FAILURE_LIMITS.perMinute, `${checked} guesses checked`);
    for (const res of answers) if (res.status !== 401) assertCutOff(res, 'a guess of the burst');
    assertCutOff(await send(base, '127.0.3.100', basic(tenant.email, tenant.password)), 'after');
  });

  it('runs no hash for a refused attempt', async () => {
    const tenant = await newTenant(t.app);
    const [guesser, control] = addresses(4, 2) as [string, string];
    for (let i = 0; i < EMAIL_ADDRESS_FAILURE_LIMITS.perMinute; i++) {
      assert.equal((await send(base, guesser, basic(tenant.email, `${WRONG} ${i}`))).status, 401);
    }
    // The app's hasher counts the passwords it checks: another address's attempt is checked...
    const right = basic(tenant.email, tenant.password);
    const before = passwords.checked;
    assert.equal((await send(base, control, right)).status, 200);
    assert.equal(
      passwords.checked,
      before + 1,
      'the password of an attempt let through is checked',
    );
    // ...and the cut-off address is refused before any check, on the API and the portal.
    assertCutOff(await send(base, guesser, right), 'API');
    const portal = await new Visitor(t.app, guesser).signIn(tenant.email, tenant.password);
    assert.equal(portal.statusCode, 429, 'portal');
    assert.equal(passwords.checked, before + 1, 'no password of a refused attempt is checked');
  });

  it('shares the counters with the portal, both ways', async () => {
    // Wrong passwords on the API lock the email on the portal...
    const tenant = await newTenant(t.app);
    for (const [i, from] of addresses(5, EMAIL_FAILURE_LIMITS.perMinute).entries()) {
      assert.equal((await send(base, from, basic(tenant.email, `${WRONG} ${i}`))).status, 401);
    }
    const portal = await new Visitor(t.app).signIn(tenant.email, tenant.password);
    assert.equal(portal.statusCode, 429);
    assert.ok(Number(portal.headers['retry-after']) >= 1);
    // ...and wrong passwords on the portal lock the API, for that address and email.
    const other = await newTenant(t.app);
    const [guesser, elsewhere] = addresses(6, 2) as [string, string];
    for (let i = 0; i < EMAIL_ADDRESS_FAILURE_LIMITS.perMinute; i++) {
      const res = await new Visitor(t.app, guesser).signIn(other.email, `${WRONG} ${i}`);
      assert.equal(res.statusCode, 401);
    }
    assertCutOff(await send(base, guesser, basic(other.email, other.password)), 'API');
    assert.equal((await send(base, elsewhere, basic(other.email, other.password))).status, 200);
  });

  it('counts no right password, and counts wrong ones per address across emails', async () => {
    const tenant = await newTenant(t.app);
    const [from] = addresses(7, 1) as [string];
    for (let i = 0; i < 2 * ADDRESS_FAILURE_LIMITS.perMinute; i++) {
      const res = await send(base, from, basic(tenant.email, tenant.password));
      assert.equal(res.status, 200, `sign-in ${i + 1}`);
    }
    // One address guessing a new email each time is cut off by its own counter.
    const statuses: number[] = [];
    for (let i = 0; i <= ADDRESS_FAILURE_LIMITS.perMinute; i++) {
      const res = await send(base, from, basic(`nobody-${i}-${now}@example.com`, WRONG));
      statuses.push(res.status);
    }
    assert.equal(statuses.indexOf(429), ADDRESS_FAILURE_LIMITS.perMinute);
    assertCutOff(await send(base, from, basic(tenant.email, tenant.password)), 'right, after');
  });

  it('keeps no email in the shared counter store, not even as a plain digest', {
    skip: process.env.TEST_REDIS_URL === undefined && 'counters are in Redis only when shared',
  }, async () => {
    const tenant = await newTenant(t.app);
    const [from] = addresses(8, 1) as [string];
    assert.equal((await send(base, from, basic(tenant.email, WRONG))).status, 401);
    const redis = new Redis(process.env.TEST_REDIS_URL as string);
    try {
      const keys = await redis.keys(`${t.app.ctx.config.redisKeyPrefix}*`);
      const local = tenant.email.split('@')[0] as string;
      const digest = createHash('sha256').update(tenant.email).digest('hex').slice(0, 16);
      assert.ok(
        keys.some((key) => key.includes('sign-in:email:')),
        keys.join('\n'),
      );
      for (const key of keys) {
        assert.ok(!key.includes(local) && !key.includes(digest), key);
      }
    } finally {
      redis.disconnect();
    }
  });

  it('counts an IPv6 client per /64, without a valid key too', async () => {
    const badKey = { authorization: `Bearer as_test_${'x'.repeat(40)}` };
    for (let i = 1; i <= 60; i++) {
      const res = await t.app.inject({
        url: '/v1/pets',
        headers: badKey,
        remoteAddress: `2001:db8:77:1::${i.toString(16)}`,
      });
      assert.equal(res.statusCode, 401, `request ${i}`);
    }
    const sameBlock = await t.app.inject({
      url: '/v1/pets',
      headers: badKey,
      remoteAddress: '2001:db8:77:1:ffff:ffff:ffff:fffe',
    });
    assert.equal(sameBlock.statusCode, 429);
    assert.equal(errorCode(sameBlock), 'rate_limited');
    const nextBlock = await t.app.inject({
      url: '/v1/pets',
      headers: badKey,
      remoteAddress: '2001:db8:77:2::1',
    });
    assert.equal(nextBlock.statusCode, 401);
  });
});

describe('SignInThrottle', () => {
  const limiter = new RateLimiter(
    new MemoryCounterStore(),
    { now: () => new Date(90_030_000) },
    {
      banThreshold: 20,
      banSeconds: 900,
    },
  );
  const outages = new Outages(createLog('silent'), {});
  const throttle = new SignInThrottle(
    limiter,
    { now: () => new Date(90_030_000) },
    'closed',
    outages,
    ['a server key of at least thirty-two characters'],
  );
  after(() => limiter.close());

  it('counts an IPv6 client per /64, an IPv4-mapped one as IPv4', () => {
    const ids = (ip: string) => throttle.counters(ip, 'someone@example.com').map((c) => c.id);
    assert.deepEqual(ids('2001:db8:1:2::a'), ids('2001:db8:1:2:ffff:ffff:ffff:ffff'));
    assert.notDeepEqual(ids('2001:db8:1:2::a'), ids('2001:db8:1:3::a'));
    assert.deepEqual(ids('::ffff:192.0.2.1'), ids('192.0.2.1'));
    assert.equal(clientSubject({ ip: '2001:db8:1:2::a' }).id, 'ip:2001:db8:1:2::/64');
    assert.equal(clientSubject({ ip: '192.0.2.1' }).id, 'ip:192.0.2.1');
  });

  it('keys emails by an HMAC under the server key, never the email or its digest', () => {
    const email = 'Someone.Else@Example.com';
    const ids = throttle.counters('192.0.2.1', email).map((c) => c.id);
    for (const id of ids) {
      assert.ok(!id.toLowerCase().includes('someone'), id);
      for (const text of [email, email.toLowerCase()]) {
        const plain = createHash('sha256').update(text).digest('hex').slice(0, 16);
        assert.ok(!id.includes(plain), id);
      }
    }
    // The same email however written; another server key, other counters.
    assert.deepEqual(
      throttle.counters('192.0.2.1', ' someone.else@example.COM ').map((c) => c.id),
      ids,
    );
    const rekeyed = new SignInThrottle(limiter, { now: () => new Date(0) }, 'closed', outages, [
      'another server key, thirty-two characters or more',
    ]);
    assert.notDeepEqual(
      rekeyed.counters('192.0.2.1', email).map((c) => c.id),
      ids,
    );
  });

  it('calls no check once a counter is used up, and counts only failures', async () => {
    let checks = 0;
    const wrong = async () => {
      checks++;
      return fail('invalid_credentials', 'The email or password is wrong.');
    };
    const right = async () => {
      checks++;
      return ok('signed in');
    };
    const email = 'ipv6-user@example.com';
    for (let i = 0; i < 3; i++) {
      assert.equal((await throttle.verify('2001:db8:5:5::1', email, right)).ok, true);
    }
    for (let i = 1; i <= EMAIL_ADDRESS_FAILURE_LIMITS.perMinute; i++) {
      // A new address each time, all in one /64: one client.
      const result = await throttle.verify(`2001:db8:5:5::${i + 1}`, email, wrong);
      assert.ok(!result.ok && !('refused' in result));
    }
    assert.equal(checks, 3 + EMAIL_ADDRESS_FAILURE_LIMITS.perMinute);
    const refused = await throttle.verify('2001:db8:5:5:abcd::1', email, right);
    assert.ok('refused' in refused && refused.refused.code === 'rate_limited');
    assert.equal(refused.refused.headers?.['retry-after'], '30');
    assert.equal(checks, 3 + EMAIL_ADDRESS_FAILURE_LIMITS.perMinute, 'no check ran');
    // Another /64 still signs in.
    assert.equal((await throttle.verify('2001:db8:5:6::1', email, right)).ok, true);
  });
});
