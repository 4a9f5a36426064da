/**
 * The sandbox reset (issue 55, docs/decisions/0084-sandbox-reset.md): an account's test data
 * removed in one transaction, nothing of another account's; ids never given twice; the sample;
 * its scope, its idempotency, its event; refused on a production instance; the portal's form.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  as,
  createCategory,
  createPet,
  errorCode,
  newTenant,
  PRODUCTION_ENV,
  startApp,
  type Tenant,
  type TestApp,
} from './helpers.js';
import { Visitor } from './portal-visitor.js';

const newEmail = () => `sandbox-${crypto.randomUUID()}@example.com`;

const reset = (t: TestApp, tenant: Tenant, query = '', headers: Record<string, string> = {}) =>
  as(t.app, tenant, { method: 'POST', url: `/v1/sandbox/reset${query}`, headers });

describe('POST /v1/sandbox/reset', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  /** A category, two pets (one on a cancelled order, one on an open one), a message, a
   * webhook endpoint with a test delivery: what a reset removes, and what it keeps. */
  async function populate(tenant: Tenant) {
    const dogs = await createCategory(t.app, tenant, 'Dogs');
    const rex = await createPet(t.app, tenant, { name: 'Rex', categoryId: dogs.id });
    const kiwi = await createPet(t.app, tenant, { name: 'Kiwi', categoryId: dogs.id });
    const order = async (petId: number) =>
      (
        await as(t.app, tenant, { method: 'POST', url: '/v1/store/orders', payload: { petId } })
      ).json();
    const cancelled = await order(rex.id);
    await as(t.app, tenant, {
      method: 'PATCH',
      url: `/v1/store/orders/${cancelled.id}`,
      payload: { status: 'cancelled' },
    });
    await order(kiwi.id);
    await as(t.app, tenant, { method: 'POST', url: '/messages', payload: { message: 'hi' } });
    const hook = await as(t.app, tenant, {
      method: 'POST',
      url: '/v1/webhooks',
      payload: { url: 'http://127.0.0.1:9/hook', events: ['*'] },
    });
    await as(t.app, tenant, {
      method: 'PATCH',
      url: `/v1/webhooks/${hook.json().id}`,
      payload: { enabled: false },
    });
    await as(t.app, tenant, { method: 'POST', url: `/v1/webhooks/${hook.json().id}/test` });
    return { rex, kiwi, webhookId: hook.json().id as string };
  }

  const list = async (tenant: Tenant, url: string) =>
    (await as(t.app, tenant, { method: 'GET', url })).json();

  it("removes the account's test data in one go, keeps its keys and endpoints, and nothing of another's", async () => {
    const owner = await newTenant(t.app);
    const other = await newTenant(t.app);
    const { kiwi, webhookId } = await populate(owner);
    await populate(other);
    const othersBefore = {
      pets: await list(other, '/v1/pets'),
      categories: await list(other, '/v1/categories'),
      orders: await list(other, '/v1/store/orders'),
      events: (await list(other, '/v1/events?limit=100')).length,
    };

    const res = await reset(t, owner);
    assert.equal(res.statusCode, 200, res.body);
    const { removed, seeded } = res.json();
    assert.equal(seeded, null);
    assert.deepEqual(
      { ...removed, events: removed.events > 5, deliveries: removed.deliveries >= 1 },
      { pets: 2, categories: 1, orders: 2, messages: 1, events: true, deliveries: true },
    );
    assert.deepEqual(await list(owner, '/v1/pets'), []);
    assert.deepEqual(await list(owner, '/v1/categories'), []);
    assert.deepEqual(await list(owner, '/v1/store/orders'), []);
    assert.deepEqual(await list(owner, '/v1/store/inventory'), {
      available: 0,
      pending: 0,
      sold: 0,
    });
    // Its one event now: the reset itself, carrying the answer.
    const events = await list(owner, '/v1/events?limit=100');
    assert.deepEqual(
      events.map((e: { type: string }) => e.type),
      ['sandbox.reset'],
    );
    assert.deepEqual(events[0].data, res.json());
    // Kept: the key (this call used it), the endpoint, the account.
    assert.equal(
      (await as(t.app, owner, { method: 'GET', url: `/v1/webhooks/${webhookId}` })).statusCode,
      200,
    );
    assert.equal((await as(t.app, owner, { method: 'GET', url: '/v1/account' })).statusCode, 200);
    // Another account's data: as it was.
    assert.deepEqual(
      {
        pets: await list(other, '/v1/pets'),
        categories: await list(other, '/v1/categories'),
        orders: await list(other, '/v1/store/orders'),
        events: (await list(other, '/v1/events?limit=100')).length,
      },
      othersBefore,
    );

    // No id is given twice: numbering goes on from where it was.
    const dogs = await createCategory(t.app, owner, 'Dogs again');
    const next = await createPet(t.app, owner, { name: 'Rex II', categoryId: dogs.id });
    assert.ok(next.id > kiwi.id, `pet ${next.id} after ${kiwi.id}`);
  });

  it('adds the sample with seed=sample: three categories, a pet in each status, an open order', async () => {
    const owner = await newTenant(t.app);
    await populate(owner);
    const res = await reset(t, owner, '?seed=sample');
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().seeded, { categories: 3, pets: 6, orders: 1 });
    const categories = await list(owner, '/v1/categories');
    assert.deepEqual(
      categories.map((c: { name: string }) => c.name),
      ['Dogs', 'Cats', 'Birds'],
    );
    assert.deepEqual(await list(owner, '/v1/store/inventory'), {
      available: 4,
      pending: 1,
      sold: 1,
    });
    const orders = await list(owner, '/v1/store/orders');
    assert.equal(orders.length, 1);
    assert.equal(orders[0].status, 'placed');
    const events = (await list(owner, '/v1/events?limit=100')).map((e: { type: string }) => e.type);
    assert.equal(events[0], 'sandbox.reset', 'the reset before the sample it adds');
    assert.ok(events.includes('order.placed'));
    const bad = await reset(t, owner, '?seed=everything');
    assert.equal(bad.statusCode, 400);
    assert.equal(errorCode(bad), 'validation_failed');
  });

  it('answers a retry with the same Idempotency-Key from its first answer, resetting once', async () => {
    const owner = await newTenant(t.app);
    await populate(owner);
    const key = { 'idempotency-key': `reset-${Date.now()}` };
    const first = await reset(t, owner, '', key);
    assert.equal(first.statusCode, 200);
    const dogs = await createCategory(t.app, owner, 'After');
    const again = await reset(t, owner, '', key);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.json(), first.json());
    assert.deepEqual(
      (await list(owner, '/v1/categories')).map((c: { id: number }) => c.id),
      [dogs.id],
      'the replay removed nothing',
    );
  });

  it('needs sandbox:write: a key without it is 403 insufficient_scope, and nothing goes', async () => {
    const owner = await newTenant(t.app);
    const dogs = await createCategory(t.app, owner, 'Dogs');
    const made = await t.app.inject({
      method: 'POST',
      url: '/v1/keys',
      headers: {
        authorization: `Basic ${Buffer.from(`${owner.email}:${owner.password}`).toString('base64')}`,
      },
      payload: { scopes: ['pets:write', 'categories:write'] },
    });
    const narrow = await t.app.inject({
      method: 'POST',
      url: '/v1/sandbox/reset',
      headers: { authorization: `Bearer ${made.json().key}` },
    });
    assert.equal(narrow.statusCode, 403);
    assert.equal(errorCode(narrow), 'insufficient_scope');
    assert.equal((await list(owner, '/v1/categories'))[0]?.id, dogs.id);
  });

  it('resets from the portal behind a confirmation, with the sample if ticked', async () => {
    const visitor = new Visitor(t.app);
    await visitor.signUp(newEmail());
    const account = await visitor.get('/portal/account');
    assert.match(account.body, /href="\/portal\/sandbox"/);
    const confirm = await visitor.get('/portal/sandbox');
    assert.equal(confirm.statusCode, 200);
    assert.match(confirm.body, /Reset test data<\/button>/);
    const done = await visitor.post('/portal/sandbox', { seed: 'sample' });
    assert.equal(done.statusCode, 200, done.body);
    assert.match(done.body, /Added the sample: 3 categories,\s+6 pets and 1 order\./);
    // Without its CSRF token, nothing happens.
    visitor.csrf = 'forged';
    const forged = await visitor.post('/portal/sandbox', {});
    assert.equal(forged.statusCode, 403);
  });
});

describe('the sandbox on a production instance', () => {
  it('refuses a reset with 403 sandbox_only, from the API and the portal, and removes nothing', async () => {
    const t = await startApp({
      env: PRODUCTION_ENV,
    });
    try {
      const owner = await newTenant(t.app);
      assert.match(owner.key, /^as_live_/);
      const dogs = await createCategory(t.app, owner, 'Dogs');
      const res = await reset(t, owner);
      assert.equal(res.statusCode, 403);
      assert.equal(errorCode(res), 'sandbox_only');
      assert.match(res.json().message, /production instance.*as_live_/);
      const left = await as(t.app, owner, { method: 'GET', url: '/v1/categories' });
      assert.deepEqual(
        left.json().map((c: { id: number }) => c.id),
        [dogs.id],
      );
      const visitor = new Visitor(t.app);
      await visitor.signUp(newEmail());
      assert.doesNotMatch((await visitor.get('/portal/account')).body, /\/portal\/sandbox/);
      assert.equal((await visitor.get('/portal/sandbox')).statusCode, 403);
    } finally {
      await t.close();
    }
  });
});
