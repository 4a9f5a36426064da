import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createClient, DEFAULT_BASE_URL, resolveBaseUrl } from '../src/index.js';
import { nextLink } from '../src/pagination.js';
import { LimitedFor, RateLimitGate, readRateLimit, retryAfterSeconds } from '../src/rate-limit.js';

describe('the SDK, piece by piece', () => {
  it('resolves a base URL with or without /v1, and a messages server', () => {
    assert.deepEqual(resolveBaseUrl('http://127.0.0.1:8080'), {
      api: 'http://127.0.0.1:8080/v1',
      messages: 'http://127.0.0.1:8080',
    });
    assert.deepEqual(resolveBaseUrl('https://shop.example/api/v1/', 'https://m.example/'), {
      api: 'https://shop.example/api/v1',
      messages: 'https://m.example',
    });
  });

  it('talks to the local service when no address is given, and names a wrong option', async () => {
    const seen: string[] = [];
    const client = createClient({
      fetch: async (request) => {
        seen.push(request.url);
        return Response.json({ available: 0, pending: 0, sold: 0 });
      },
    });
    await client.store.inventory();
    assert.deepEqual(seen, [`${DEFAULT_BASE_URL}/v1/store/inventory`]);
    assert.equal(DEFAULT_BASE_URL, 'http://127.0.0.1:8080');
    // The named environments are gone: their names are not addresses.
    assert.throws(() => createClient({ baseUrl: 'production' }), {
      name: 'TypeError',
      message: /^baseUrl must be the service's http\(s\) address/,
    });
    assert.throws(() => createClient({ environment: 'staging' }), /^TypeError: environment must/);
    assert.throws(() => createClient({ baseUrl: 'ftp://a.example' }), /baseUrl must/);
    assert.throws(() => createClient({ messagesUrl: 'nowhere' }), /messagesUrl must/);
    // `environment`, the older name, still takes an address.
    assert.doesNotThrow(() => createClient({ environment: 'http://127.0.0.1:8080' }));
  });

  it('finds rel="next" among links, relative or absolute', () => {
    const base = 'http://a.example/v1/pets';
    assert.equal(
      nextLink('<http://a.example/v1/pets?cursor=x>; rel="next"', base),
      'http://a.example/v1/pets?cursor=x',
    );
    assert.equal(
      nextLink('</v1/pets?cursor=1>; rel="prev", </v1/pets?cursor=2>; rel="next last"', base),
      'http://a.example/v1/pets?cursor=2',
    );
    assert.equal(
      nextLink('</v1/pets?cursor=3>; title="a, b; c"; rel=next', base),
      'http://a.example/v1/pets?cursor=3',
    );
    assert.equal(nextLink('</v1/pets?cursor=1>; rel="prev"', base), undefined);
    assert.equal(nextLink(null, base), undefined);
  });

  it('reads Retry-After as seconds or a date, and the rate-limit fields', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(retryAfterSeconds(new Headers({ 'retry-after': '7' }), now), 7);
    const date = 'Thu, 01 Jan 2026 00:00:30 GMT';
    assert.equal(retryAfterSeconds(new Headers({ 'retry-after': date }), now), 30);
    assert.equal(retryAfterSeconds(new Headers(), now), undefined);
    const state = readRateLimit(
      new Headers({
        'x-ratelimit-limit': '60',
        'x-ratelimit-remaining': '12',
        'x-ratelimit-reset': '1767225660',
        ratelimit: '"minute";r=12;t=37',
        'ratelimit-policy': '"minute";q=60;w=60, "day";q=1000;w=86400',
      }),
      now,
    );
    assert.deepEqual(state, {
      limit: 60,
      remaining: 12,
      reset: 1767225660,
      resetsAt: new Date(now + 37_000),
      window: 'minute',
      policy: '"minute";q=60;w=60, "day";q=1000;w=86400',
    });
    assert.equal(readRateLimit(new Headers({ 'x-ratelimit-limit': '60' }), now), undefined);
  });

  it('lets out no more than the fewest remaining a window has shown, whatever order answers come in', async () => {
    let now = 1_000_000;
    const sleeps: number[] = [];
    const gate = new RateLimitGate({
      maxWaitMs: 60_000,
      now: () => now,
      // A wait is noted and never ends by itself: a request that waits stays waiting.
      sleep: (ms) => {
        sleeps.push(ms);
        return new Promise(() => {});
      },
      random: () => 0,
    });
    const answer = (remaining: number) =>
      new Headers({
        'x-ratelimit-limit': '60',
        'x-ratelimit-remaining': String(remaining),
        'x-ratelimit-reset': '2000',
        ratelimit: `"minute";r=${remaining};t=30`,
      });
    const settled = async (p: Promise<void>) =>
      Promise.race([p.then(() => true), new Promise((r) => setTimeout(() => r(false), 20))]);

    // Unknown: one request goes, the next waits for its answer.
    await gate.enter();
    const second = gate.enter();
    assert.equal(await settled(second), false, 'waits for the first answer');
    gate.leave(answer(3), 200);
    assert.equal(await settled(second), true);
    // 3 remaining when nothing was out: the second and two more go, then none.
    await gate.enter();
    await gate.enter();
    assert.equal(await settled(gate.enter()), false, 'the fourth waits for the window');
    assert.deepEqual(sleeps, [30_000]);
    // The late answer of a request counted early (r=2) does not raise the allowance that the
    // later answers (r=0) lowered.
    gate.leave(answer(0), 200);
    gate.leave(answer(2), 200);
    assert.equal(gate.last?.remaining, 0);
    assert.equal(await settled(gate.enter()), false);
    // The last one out gets no answer; the window refills: unknown again, one request goes.
    gate.leave(undefined, undefined);
    now += 31_000;
    assert.equal(await settled(gate.enter()), true);
    // Limited for longer than maxWaitMs: refused at once, unsent.
    gate.leave(new Headers({ 'retry-after': '120' }), 429);
    await assert.rejects(gate.enter(), LimitedFor);
  });
});
