import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { systemClock } from '../src/clock.js';
import { createApiKey, hashApiKey, MAX_LIVE_KEYS, secretKey } from '../src/domain/api-keys.js';
import { basic, errorCode, newTenant, PRODUCTION_ENV, startApp, type TestApp } from './helpers.js';

describe('accounts and API keys', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  const signUp = (email: string, password = 'twelve chars or more') =>
    t.app.inject({ method: 'POST', url: '/v1/accounts', payload: { email, password } });

  it('creates an account on the Free plan without a key', async () => {
    const email = `Ann-${randomUUID()}@Example.com`;
    const res = await signUp(email);
    assert.equal(res.statusCode, 201);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['createdAt', 'email', 'id', 'plan']);
    assert.match(body.id, /^acct_[0-9A-Za-z]{16}$/);
    assert.equal(body.email, email.toLowerCase());
    assert.equal(body.plan, 'free');
    assert.ok(Math.abs(Date.parse(body.createdAt) - Date.now()) < 60_000);
  });

  it('refuses a duplicate email, whatever its case, with 409', async () => {
    const email = `dup-${randomUUID()}@example.com`;
    assert.equal((await signUp(email)).statusCode, 201);
    const again = await signUp(email.toUpperCase());
    assert.equal(again.statusCode, 409);
    assert.equal(errorCode(again), 'email_taken');
  });

  it('refuses passwords under 12 characters and stores only a scrypt hash', async () => {
    const short = await signUp(`short-${randomUUID()}@example.com`, 'elevenchars');
    assert.equal(short.statusCode, 400);
    assert.equal(errorCode(short), 'validation_failed');

    const email = `hash-${randomUUID()}@example.com`;
    await signUp(email, 'my secret password');
    const row = await t.database.reader
      .selectFrom('accounts')
      .select('password_hash')
      .where('email', '=', email)
      .executeTakeFirstOrThrow();
    assert.match(row.password_hash, /^scrypt\$\d+\$\d+\$\d+\$[\w-]+\$[\w-]+$/);
    assert.ok(!row.password_hash.includes('my secret password'));
  });

  it('creates a key shown once, stores only its hash, and lists keys without secrets', async () => {
    const tenant = await newTenant(t.app);
    const auth = { authorization: basic(tenant.email, tenant.password) };
    const created = await t.app.inject({
      method: 'POST',
      url: '/v1/keys',
      headers: auth,
      payload: { name: 'laptop' },
    });
    assert.equal(created.statusCode, 201);
    const key = created.json();
    assert.deepEqual(Object.keys(key).sort(), [
      'allowedOrigins',
      'createdAt',
      'id',
      'key',
      'name',
      'prefix',
      'scopes',
      'type',
    ]);
    assert.equal(key.type, 'secret');
    assert.equal(key.allowedOrigins, null);
    assert.match(key.key, /^as_test_[0-9A-Za-z]{40}$/);
    assert.equal(key.prefix, key.key.slice(0, 12));
    assert.equal(key.name, 'laptop');

    const stored = await t.database.reader
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', key.id)
      .executeTakeFirstOrThrow();
    assert.equal(stored.hash, hashApiKey(key.key));
    assert.ok(!JSON.stringify(stored).includes(key.key));

    const list = await t.app.inject({ url: '/v1/keys', headers: auth });
    assert.equal(list.statusCode, 200);
    assert.ok(!list.body.includes(key.key));
    const ids = list.json().map((k: { id: string }) => k.id);
    assert.deepEqual(ids.sort(), [tenant.keyId, key.id].sort());
    for (const item of list.json()) {
      assert.deepEqual(Object.keys(item).sort(), [
        'allowedOrigins',
        'createdAt',
        'id',
        'lastUsedAt',
        'name',
        'prefix',
        'scopes',
        'type',
      ]);
    }
  });

  it('holds at most 100 live keys per account: the 101st is refused with 409 until one is revoked', async () => {
    const tenant = await newTenant(t.app);
    // 98 more made straight in the store (as the CLI would, without the API's check): 99 live.
    await t.app.ctx.database.write(async (tx) => {
      for (let i = 0; i < 98; i++) {
        await createApiKey(
          tx,
          systemClock,
          'development',
          tenant.accountId,
          secretKey(`bulk ${i}`),
        );
      }
    });
    const auth = { authorization: basic(tenant.email, tenant.password) };
    const post = () =>
      t.app.inject({ method: 'POST', url: '/v1/keys', headers: auth, payload: {} });
    assert.equal((await post()).statusCode, 201);
    const refused = await post();
    assert.equal(refused.statusCode, 409);
    assert.equal(errorCode(refused), 'key_limit_reached');
    const list = await t.app.inject({ method: 'GET', url: '/v1/keys', headers: auth });
    assert.equal(list.json().length, MAX_LIVE_KEYS);
    const revoked = await t.app.inject({
      method: 'DELETE',
      url: `/v1/keys/${tenant.keyId}`,
      headers: auth,
    });
    assert.equal(revoked.statusCode, 204);
    assert.equal((await post()).statusCode, 201);
  });

  it('creates a key without a body', async () => {
    const tenant = await newTenant(t.app);
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/keys',
      headers: { authorization: basic(tenant.email, tenant.password) },
    });
    assert.equal(res.statusCode, 201);
    assert.equal(res.json().name, null);
  });

  it('records when a key was last used', async () => {
    const tenant = await newTenant(t.app);
    await t.app.inject({ url: '/v1/account', headers: tenant.headers });
    // The stamp is written after the answer; give the write a moment to land.
    let lastUsedAt: string | null = null;
    for (let i = 0; i < 50 && !lastUsedAt; i++) {
      await new Promise((r) => setTimeout(r, 10));
      const list = await t.app.inject({
        url: '/v1/keys',
        headers: { authorization: basic(tenant.email, tenant.password) },
      });
      lastUsedAt = list.json()[0].lastUsedAt;
    }
    assert.ok(lastUsedAt && Math.abs(Date.parse(lastUsedAt) - Date.now()) < 60_000);
  });

  it('revokes a key: refused from the next request on, and gone from the list', async () => {
    const tenant = await newTenant(t.app);
    const auth = { authorization: basic(tenant.email, tenant.password) };
    assert.equal(
      (await t.app.inject({ url: '/v1/pets', headers: tenant.headers })).statusCode,
      200,
    );

    const del = await t.app.inject({
      method: 'DELETE',
      url: `/v1/keys/${tenant.keyId}`,
      headers: auth,
    });
    assert.equal(del.statusCode, 204);
    const refused = await t.app.inject({ url: '/v1/pets', headers: tenant.headers });
    assert.equal(refused.statusCode, 401);
    assert.equal(errorCode(refused), 'invalid_api_key');

    const again = await t.app.inject({
      method: 'DELETE',
      url: `/v1/keys/${tenant.keyId}`,
      headers: auth,
    });
    assert.equal(again.statusCode, 404);
    const list = await t.app.inject({ url: '/v1/keys', headers: auth });
    assert.deepEqual(list.json(), []);
  });

  it('shows the account of the key with its plan limits and usage', async () => {
    const tenant = await newTenant(t.app, { plan: 'free' });
    const res = await t.app.inject({ url: '/v1/account', headers: tenant.headers });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.deepEqual(
      { ...body, usage: undefined },
      {
        id: tenant.accountId,
        email: tenant.email,
        plan: 'free',
        limits: { perMinute: 60, perDay: 1000 },
        usage: undefined,
        deprecatedCalls: 0,
      },
    );
    // Creating the key (HTTP Basic) and this request: both count against the account. The
    // minute may have turned between them, the day almost never does.
    assert.ok(body.usage.minute === 2 || body.usage.minute === 1, JSON.stringify(body.usage));
    assert.ok(body.usage.day >= body.usage.minute);
  });

  it('refuses a development key in production, naming the environment', async () => {
    const tenant = await newTenant(t.app);
    const prod = await startApp({
      env: PRODUCTION_ENV,
    });
    try {
      const res = await prod.app.inject({ url: '/v1/pets', headers: tenant.headers });
      assert.equal(res.statusCode, 401);
      assert.equal(errorCode(res), 'invalid_api_key');
      assert.match(res.json().message, /staging or development/);
    } finally {
      await prod.close();
    }
  });
});
