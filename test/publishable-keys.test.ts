/**
 * Publishable keys (docs/decisions/0087-publishable-keys.md): made with their origins, read the
 * catalogue only, only from those origins, with CORS answers for them alone, counted apart from
 * their account's plan.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import {
  as,
  basic,
  createCategory,
  createPet,
  errorCode,
  freshIp,
  newTenant,
  planAccount,
  startApp,
  type Tenant,
} from './helpers.js';

const t = await startApp();
after(() => t.close());

const SHOP = 'https://shop.example';

async function publishableKey(
  tenant: Tenant,
  allowedOrigins: string[] = [SHOP],
): Promise<{ id: string; key: string }> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/v1/keys',
    headers: { authorization: basic(tenant.email, tenant.password) },
    payload: { name: 'storefront', type: 'publishable', allowedOrigins },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

function fromPage(
  key: string,
  url: string,
  origin: string | null = SHOP,
  options: { method?: 'GET' | 'POST' | 'HEAD'; payload?: object; remoteAddress?: string } = {},
): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: options.method ?? 'GET',
    url,
    headers: { authorization: `Bearer ${key}`, ...(origin !== null && { origin }) },
    remoteAddress: options.remoteAddress ?? '203.0.113.7',
    ...(options.payload && { payload: options.payload }),
  });
}

function preflight(url: string, origin: string, method = 'GET'): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'OPTIONS',
    url,
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization',
    },
    remoteAddress: freshIp(),
  });
}

function corsHeaders(res: LightMyRequestResponse): string[] {
  return Object.keys(res.headers).filter((name) => name.startsWith('access-control-'));
}

describe('publishable keys', () => {
  it('are made with their origins, as_pk_, and read the catalogue only', async () => {
    const tenant = await newTenant(t.app);
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/keys',
      headers: { authorization: basic(tenant.email, tenant.password) },
      payload: {
        type: 'publishable',
        allowedOrigins: ['https://Shop.Example/', 'http://localhost:5173'],
      },
    });
    assert.equal(res.statusCode, 201, res.body);
    const made = res.json();
    assert.match(made.key, /^as_pk_test_[0-9A-Za-z]{40}$/);
    assert.equal(made.type, 'publishable');
    assert.equal(made.prefix, made.key.slice(0, 15));
    assert.deepEqual(made.scopes, ['pets:read', 'categories:read']);
    assert.deepEqual(made.allowedOrigins, ['https://shop.example', 'http://localhost:5173']);

    const list = await t.app.inject({
      url: '/v1/keys',
      headers: { authorization: basic(tenant.email, tenant.password) },
    });
    const shown = list.json().find((key: { id: string }) => key.id === made.id);
    assert.equal(shown.type, 'publishable');
    assert.deepEqual(shown.allowedOrigins.sort(), [
      'http://localhost:5173',
      'https://shop.example',
    ]);
    const secret = list.json().find((key: { id: string }) => key.id === tenant.keyId);
    assert.equal(secret.type, 'secret');
    assert.equal(secret.allowedOrigins, null);
  });

  it('refuses origins that are not origins, scopes, and origins on a secret key', async () => {
    const tenant = await newTenant(t.app);
    const bodies = [
      { type: 'publishable' },
      { type: 'publishable', allowedOrigins: [] },
      { type: 'publishable', allowedOrigins: ['*'] },
      { type: 'publishable', allowedOrigins: ['https://*.shop.example'] },
      { type: 'publishable', allowedOrigins: ['https://shop.example/catalogue'] },
      { type: 'publishable', allowedOrigins: ['https://user:pw@shop.example'] },
      { type: 'publishable', allowedOrigins: ['ftp://shop.example'] },
      { type: 'publishable', allowedOrigins: ['https://shop.example?x'] },
      {
        type: 'publishable',
        allowedOrigins: Array.from({ length: 11 }, (_, i) => `https://s${i}.example`),
      },
      { type: 'publishable', allowedOrigins: [SHOP], scopes: ['pets:write'] },
      { allowedOrigins: [SHOP] },
    ];
    for (const payload of bodies) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/keys',
        headers: { authorization: basic(tenant.email, tenant.password) },
        payload,
      });
      assert.equal(res.statusCode, 400, JSON.stringify(payload));
      assert.equal(errorCode(res), 'validation_failed', JSON.stringify(payload));
    }
    const list = await t.app.inject({
      url: '/v1/keys',
      headers: { authorization: basic(tenant.email, tenant.password) },
    });
    assert.equal(list.json().length, 1, 'nothing was made');
  });

  it('reads the catalogue from a listed origin, readable by its page', async () => {
    const tenant = await newTenant(t.app);
    const category = await createCategory(t.app, tenant);
    const pet = await createPet(t.app, tenant, { categoryId: category.id });
    const { key } = await publishableKey(tenant);
    for (const url of ['/v1/pets', `/v1/pets/${pet.id}`, '/v1/categories']) {
      const res = await fromPage(key, url);
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
      assert.equal(res.headers['access-control-allow-origin'], SHOP);
      assert.equal(res.headers.vary, 'Origin');
      assert.match(String(res.headers['access-control-expose-headers']), /X-RateLimit-Remaining/);
      assert.equal(res.headers['access-control-allow-credentials'], undefined);
    }
    const pets = (await fromPage(key, '/v1/pets')).json();
    assert.deepEqual(
      pets.map((p: { id: number }) => p.id),
      [pet.id],
    );
  });

  it('is refused from another origin, or from no page, without CORS headers', async () => {
    const tenant = await newTenant(t.app);
    const { key } = await publishableKey(tenant);
    for (const origin of ['https://evil.example', 'http://shop.example', null]) {
      const res = await fromPage(key, '/v1/pets', origin);
      assert.equal(res.statusCode, 403, String(origin));
      assert.equal(errorCode(res), 'origin_not_allowed');
      assert.deepEqual(corsHeaders(res), [], String(origin));
    }
  });

  it('cannot write, nor read beyond the catalogue, and says why', async () => {
    const tenant = await newTenant(t.app);
    const category = await createCategory(t.app, tenant);
    const { key } = await publishableKey(tenant);
    const writes = [
      fromPage(key, '/v1/pets', SHOP, {
        method: 'POST',
        payload: { name: 'Rex', categoryId: category.id },
      }),
      fromPage(key, '/v1/categories', SHOP, { method: 'POST', payload: { name: 'Cats' } }),
      fromPage(key, '/v1/store/orders'),
      fromPage(key, '/v1/account'),
      fromPage(key, '/v1/webhooks'),
      fromPage(key, '/v1/requests'),
    ];
    for (const res of await Promise.all(writes)) {
      assert.equal(res.statusCode, 403, res.body);
      assert.equal(errorCode(res), 'insufficient_scope');
      assert.match(res.json().message, /publishable key only reads the catalogue/);
      // The page may read why.
      assert.equal(res.headers['access-control-allow-origin'], SHOP);
    }
    const pets = await as(t.app, tenant, { url: '/v1/pets' });
    assert.deepEqual(pets.json(), [], 'nothing was written');
  });

  it('answers a preflight only for a listed origin, GET, and a catalogue path', async () => {
    const tenant = await newTenant(t.app);
    const origin = `https://preflight-${tenant.accountId.toLowerCase()}.example`;
    const { id } = await publishableKey(tenant, [origin]);
    const allowed = await preflight('/v1/pets?status=available', origin);
    assert.equal(allowed.statusCode, 204, allowed.body);
    assert.equal(allowed.headers['access-control-allow-origin'], origin);
    assert.equal(allowed.headers['access-control-allow-methods'], 'GET, HEAD');
    assert.match(String(allowed.headers['access-control-allow-headers']), /Authorization/);
    assert.equal(allowed.headers['access-control-max-age'], '600');
    assert.equal((await preflight('/v1/categories/3', origin)).statusCode, 204);

    const refused = [
      await preflight('/v1/pets/%2e%2e%2fstore%2forders', origin),
      await preflight('/v1/pets/%00', origin),
      await preflight('/v1/pets', 'https://unlisted.example'),
      await preflight('/v1/pets', origin, 'POST'),
      await preflight('/v1/pets/1', origin, 'DELETE'),
      await preflight('/v1/store/orders', origin),
      await preflight('/v1/keys', origin),
      await preflight('/portal', origin),
    ];
    for (const res of refused) {
      assert.ok([404, 405].includes(res.statusCode), `${res.statusCode} ${res.body}`);
      assert.deepEqual(corsHeaders(res), []);
    }

    // Revoked: the origin is no longer any live key's.
    const revoked = await t.app.inject({
      method: 'DELETE',
      url: `/v1/keys/${id}`,
      headers: { authorization: basic(tenant.email, tenant.password) },
    });
    assert.equal(revoked.statusCode, 204);
    const after = await preflight('/v1/pets', origin);
    assert.notEqual(after.statusCode, 204);
    assert.deepEqual(corsHeaders(after), []);
  });

  it('a secret key sent from a listed origin gets no CORS headers', async () => {
    const tenant = await newTenant(t.app);
    await publishableKey(tenant);
    const res = await as(t.app, tenant, { url: '/v1/pets', headers: { origin: SHOP } });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(corsHeaders(res), []);
  });

  it('is revoked like any key: refused from the next request on', async () => {
    const tenant = await newTenant(t.app);
    const { id, key } = await publishableKey(tenant);
    assert.equal((await fromPage(key, '/v1/pets')).statusCode, 200);
    await t.app.inject({
      method: 'DELETE',
      url: `/v1/keys/${id}`,
      headers: { authorization: basic(tenant.email, tenant.password) },
    });
    const res = await fromPage(key, '/v1/pets');
    assert.equal(res.statusCode, 401);
    assert.equal(errorCode(res), 'invalid_api_key');
  });

  it("is counted apart from the account's plan, and per client address", async () => {
    // Pro: 300 a minute for the key, so that one address's 60 are met first.
    const tenant = await newTenant(t.app, { plan: 'pro' });
    const { key } = await publishableKey(tenant);
    const before = await as(t.app, tenant, { url: '/v1/pets' });
    const remaining = Number(before.headers['x-ratelimit-remaining']);
    // The Free plan's 60 a minute for one visitor's address.
    const visitor = '198.51.100.20';
    for (let i = 0; i < 60; i++) {
      const res = await fromPage(key, '/v1/pets', SHOP, { remoteAddress: visitor });
      assert.equal(res.statusCode, 200, `request ${i + 1}: ${res.body}`);
    }
    const over = await fromPage(key, '/v1/pets', SHOP, { remoteAddress: visitor });
    assert.equal(over.statusCode, 429);
    assert.equal(errorCode(over), 'rate_limited');
    assert.equal(over.headers['access-control-allow-origin'], SHOP, 'the page may read why');
    // Another visitor still reads; the account's own budget is untouched by all of it.
    const other = await fromPage(key, '/v1/pets', SHOP, { remoteAddress: '198.51.100.21' });
    assert.equal(other.statusCode, 200, other.body);
    const mine = await as(t.app, tenant, { url: '/v1/pets' });
    assert.equal(mine.statusCode, 200);
    assert.equal(Number(mine.headers['x-ratelimit-remaining']), remaining - 1);
  });

  it('bans the address that keeps sending while the key is limited, not the key', async () => {
    const own = await startApp({ env: { RATE_LIMIT_BAN_THRESHOLD: '2' } });
    try {
      // Clear of a minute's turn, which would refill the windows midway.
      while (new Date().getUTCSeconds() > 45) await new Promise((r) => setTimeout(r, 500));
      const tenant = await newTenant(own.app);
      // 40 a minute for the key: 10 for each address.
      await planAccount(own.app, tenant.accountId, 'enterprise', { perMinute: 40, perDay: 1000 });
      const made = await own.app.inject({
        method: 'POST',
        url: '/v1/keys',
        headers: { authorization: basic(tenant.email, tenant.password) },
        payload: { type: 'publishable', allowedOrigins: [SHOP] },
      });
      const key = made.json().key as string;
      const send = (remoteAddress: string) =>
        own.app.inject({
          url: '/v1/pets',
          headers: { authorization: `Bearer ${key}`, origin: SHOP },
          remoteAddress,
        });
      for (const visitor of [1, 2, 3, 4]) {
        for (let i = 0; i < 10; i++) {
          assert.equal((await send(`198.51.100.${visitor}`)).statusCode, 200);
        }
        assert.equal(errorCode(await send(`198.51.100.${visitor}`)), 'rate_limited');
      }
      // The key's minute is used up: a fifth visitor is refused, and keeps sending.
      assert.equal(errorCode(await send('198.51.100.5')), 'rate_limited');
      // Past the grace after the first refusal, each refusal is a strike; past 2, a ban.
      await new Promise((r) => setTimeout(r, 1_100));
      const codes = [];
      for (let i = 0; i < 3; i++) codes.push(await send('198.51.100.5'));
      assert.deepEqual(codes.map(errorCode), ['rate_limited', 'rate_limited', 'key_banned']);
      assert.match(codes[2]?.json().message, /This client address is temporarily banned/);
      // Another visitor meets the key's used-up window, and no ban.
      assert.equal(errorCode(await send('198.51.100.6')), 'rate_limited');
    } finally {
      await own.close();
    }
  });

  it("a page of another origin uses none of the key's budget", async () => {
    const tenant = await newTenant(t.app, { plan: 'pro' });
    const { key } = await publishableKey(tenant);
    const remaining = async () =>
      Number((await fromPage(key, '/v1/pets', SHOP)).headers['x-ratelimit-remaining']);
    const before = await remaining();
    for (let i = 0; i < 5; i++) {
      const res = await fromPage(key, '/v1/pets', 'https://evil.example', {
        remoteAddress: '192.0.2.99',
      });
      assert.equal(errorCode(res), 'origin_not_allowed');
      assert.doesNotMatch(res.json().message, /shop\.example/, "the key's origins are not told");
    }
    assert.equal(await remaining(), before - 1);
  });

  it('refuses an origin longer than browsers may send, once written in punycode', async () => {
    const tenant = await newTenant(t.app);
    // 197 characters as written, 400 and more in punycode.
    const label = '\u732b\u72ac\u9ce5\u9b5a\u725b\u99ac\u7f8a\u8c5a\u9e7f\u718a\u72d0\u72fc';
    const host = `${Array.from({ length: 14 }, () => label).join('.')}.example`;
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/keys',
      headers: { authorization: basic(tenant.email, tenant.password) },
      payload: { type: 'publishable', allowedOrigins: [`https://${host}`] },
    });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(errorCode(res), 'validation_failed');
    const list = await t.app.inject({
      url: '/v1/keys',
      headers: { authorization: basic(tenant.email, tenant.password) },
    });
    assert.equal(list.statusCode, 200);
    assert.equal(list.json().length, 1);
  });

  it('counts preflights apart from what sign-up is counted against', async () => {
    const tenant = await newTenant(t.app);
    const origin = `https://nat-${tenant.accountId.toLowerCase()}.example`;
    await publishableKey(tenant, [origin]);
    const address = '192.0.2.150';
    for (let i = 0; i < 70; i++) {
      const res = await t.app.inject({
        method: 'OPTIONS',
        url: `/v1/pets/${i + 1}`,
        headers: { origin, 'access-control-request-method': 'GET' },
        remoteAddress: address,
      });
      assert.equal(res.statusCode, 204, `preflight ${i + 1}: ${res.body}`);
    }
    const signUp = await t.app.inject({
      method: 'POST',
      url: '/v1/accounts',
      payload: { email: `nat-${Date.now()}@example.com`, password: 'a long enough password' },
      remoteAddress: address,
    });
    assert.equal(signUp.statusCode, 201, signUp.body);
  });

  it("reads only its own account's catalogue", async () => {
    const owner = await newTenant(t.app);
    const other = await newTenant(t.app);
    const category = await createCategory(t.app, other);
    const theirs = await createPet(t.app, other, { categoryId: category.id });
    const { key } = await publishableKey(owner);
    const res = await fromPage(key, `/v1/pets/${theirs.id}`);
    assert.equal(res.statusCode, 404);
    assert.deepEqual((await fromPage(key, '/v1/pets')).json(), []);
  });
});
