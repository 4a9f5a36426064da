import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  as,
  createCategory,
  createPet,
  errorCode,
  newTenant,
  nextLinkUrl,
  pathOf,
  startApp,
  type Tenant,
  type TestApp,
} from './helpers.js';

describe('store orders', () => {
  let t: TestApp;
  let owner: Tenant;
  let categoryId: number;
  before(async () => {
    t = await startApp();
    owner = await newTenant(t.app);
    categoryId = (await createCategory(t.app, owner)).id;
  });
  after(() => t.close());

  const pet = (status = 'available') => createPet(t.app, owner, { categoryId, status });
  const order = (petId: number, tenant = owner) =>
    as(t.app, tenant, { method: 'POST', url: '/v1/store/orders', payload: { petId } });
  const move = (id: number, status: string, tenant = owner) =>
    as(t.app, tenant, { method: 'PATCH', url: `/v1/store/orders/${id}`, payload: { status } });
  const petStatus = async (id: number) =>
    (await as(t.app, owner, { method: 'GET', url: `/v1/pets/${id}` })).json().status;

  it('places an order for an available pet, which becomes pending', async () => {
    const p = await pet();
    const res = await order(p.id);
    assert.equal(res.statusCode, 201);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['createdAt', 'id', 'petId', 'status', 'updatedAt']);
    assert.equal(body.status, 'placed');
    assert.equal(body.petId, p.id);
    assert.match(String(res.headers.location), new RegExp(`/v1/store/orders/${body.id}$`));
    assert.equal(await petStatus(p.id), 'pending');
    const read = await as(t.app, owner, { method: 'GET', url: `/v1/store/orders/${body.id}` });
    assert.deepEqual(read.json(), body);
    const onOrder = await as(t.app, owner, {
      method: 'GET',
      url: '/v1/pets?status=pending&limit=100',
    });
    assert.ok(onOrder.json().some((x: { id: number }) => x.id === p.id));
  });

  it('refuses pets that are not available (409) and unknown pets (404)', async () => {
    for (const status of ['pending', 'sold']) {
      const res = await order((await pet(status)).id);
      assert.equal(res.statusCode, 409);
      assert.equal(errorCode(res), 'pet_not_available');
    }
    const missing = await order(987654321);
    assert.equal(missing.statusCode, 404);
    assert.equal(errorCode(missing), 'not_found');
  });

  it('delivers: placed → approved → delivered makes the pet sold', async () => {
    const p = await pet();
    const id = (await order(p.id)).json().id;
    assert.equal((await move(id, 'approved')).json().status, 'approved');
    const done = await move(id, 'delivered');
    assert.equal(done.statusCode, 200);
    assert.equal(done.json().status, 'delivered');
    assert.equal(await petStatus(p.id), 'sold');
  });

  for (const from of ['placed', 'approved']) {
    it(`cancels from ${from}, making the pet available again`, async () => {
      const p = await pet();
      const id = (await order(p.id)).json().id;
      if (from === 'approved') await move(id, 'approved');
      const res = await move(id, 'cancelled');
      assert.equal(res.json().status, 'cancelled');
      assert.equal(await petStatus(p.id), 'available');
      assert.equal((await order(p.id)).statusCode, 201, 'the pet can be ordered again');
    });
  }

  it('refuses every other move with 409 invalid_transition and changes nothing', async () => {
    const p = await pet();
    const id = (await order(p.id)).json().id;
    const placed = await move(id, 'delivered'); // delivery needs approval first
    assert.equal(placed.statusCode, 409);
    assert.equal(errorCode(placed), 'invalid_transition');
    await move(id, 'cancelled');
    for (const status of ['placed', 'approved', 'delivered']) {
      const res = await move(id, status);
      assert.equal(res.statusCode, 409, status);
      assert.equal(errorCode(res), 'invalid_transition');
    }
    assert.equal(await petStatus(p.id), 'available');
    const delivered = (await order((await pet()).id)).json().id;
    await move(delivered, 'approved');
    await move(delivered, 'delivered');
    for (const status of ['cancelled', 'approved', 'placed']) {
      assert.equal((await move(delivered, status)).statusCode, 409);
    }
  });

  it('protects a pet with an open order from deletion and status changes', async () => {
    const p = await pet();
    const id = (await order(p.id)).json().id;
    const del = await as(t.app, owner, { method: 'DELETE', url: `/v1/pets/${p.id}` });
    assert.equal(del.statusCode, 409);
    assert.equal(errorCode(del), 'pet_on_order');
    for (const status of ['available', 'sold']) {
      const res = await as(t.app, owner, {
        method: 'PATCH',
        url: `/v1/pets/${p.id}`,
        payload: { status },
      });
      assert.equal(res.statusCode, 409);
      assert.equal(errorCode(res), 'pet_on_order');
    }
    const rename = await as(t.app, owner, {
      method: 'PATCH',
      url: `/v1/pets/${p.id}`,
      payload: { name: 'Still mine' },
    });
    assert.equal(rename.statusCode, 200);
    await move(id, 'cancelled');
    const after = await as(t.app, owner, { method: 'DELETE', url: `/v1/pets/${p.id}` });
    assert.equal(after.statusCode, 204);
  });

  it('lets exactly one of 20 concurrent orders for one pet through', async () => {
    const p = await pet();
    const results = await Promise.all(Array.from({ length: 20 }, () => order(p.id)));
    const codes = results.map((r) => r.statusCode).sort();
    assert.equal(codes.filter((c) => c === 201).length, 1, JSON.stringify(codes));
    assert.equal(codes.filter((c) => c === 409).length, 19, JSON.stringify(codes));
    for (const r of results.filter((x) => x.statusCode === 409)) {
      assert.equal(errorCode(r), 'pet_not_available');
    }
  });

  it('counts the inventory in the database after a mix of operations', async () => {
    const tenant = await newTenant(t.app);
    const category = await createCategory(t.app, tenant);
    const make = (status = 'available') =>
      createPet(t.app, tenant, { categoryId: category.id, status });
    const pets = [await make(), await make(), await make(), await make(), await make('sold')];
    const o1 = (await order(pets[0]?.id ?? 0, tenant)).json().id;
    const o2 = (await order(pets[1]?.id ?? 0, tenant)).json().id;
    await order(pets[2]?.id ?? 0, tenant);
    await move(o1, 'approved', tenant);
    await move(o1, 'delivered', tenant);
    await move(o2, 'cancelled', tenant);
    const res = await as(t.app, tenant, { method: 'GET', url: '/v1/store/inventory' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { available: 2, pending: 1, sold: 2 });
  });

  it('lists orders by id with a status filter and a next link', async () => {
    const tenant = await newTenant(t.app);
    const category = await createCategory(t.app, tenant);
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) {
      const p = await createPet(t.app, tenant, { categoryId: category.id });
      ids.push((await order(p.id, tenant)).json().id);
    }
    await move(ids[1] ?? 0, 'cancelled', tenant);
    const first = await as(t.app, tenant, { method: 'GET', url: '/v1/store/orders?limit=3' });
    assert.deepEqual(
      first.json().map((o: { id: number }) => o.id),
      ids.slice(0, 3),
    );
    const next = nextLinkUrl(first) ?? new URL('http://missing.invalid/');
    const second = await as(t.app, tenant, { method: 'GET', url: pathOf(next) });
    assert.deepEqual(
      second.json().map((o: { id: number }) => o.id),
      ids.slice(3),
    );
    const cancelled = await as(t.app, tenant, {
      method: 'GET',
      url: '/v1/store/orders?status=cancelled',
    });
    assert.deepEqual(
      cancelled.json().map((o: { id: number }) => o.id),
      [ids[1]],
    );
  });

  it('removes an ended order for good, refuses an open one with 409 order_open, and records it', async () => {
    const p = await pet();
    const placed = (await order(p.id)).json();
    const remove = (id: number, tenant = owner) =>
      as(t.app, tenant, { method: 'DELETE', url: `/v1/store/orders/${id}` });
    const open = await remove(placed.id);
    assert.equal(open.statusCode, 409);
    assert.equal(errorCode(open), 'order_open');
    assert.match(open.json().message, /cancel it first/);
    assert.equal(
      (await as(t.app, owner, { method: 'GET', url: `/v1/store/orders/${placed.id}` })).statusCode,
      200,
    );

    await move(placed.id, 'cancelled');
    const intruder = await newTenant(t.app);
    assert.equal((await remove(placed.id, intruder)).statusCode, 404);
    assert.equal((await remove(placed.id)).statusCode, 204);
    const read = await as(t.app, owner, { method: 'GET', url: `/v1/store/orders/${placed.id}` });
    assert.equal(read.statusCode, 404);
    assert.equal((await remove(placed.id)).statusCode, 404);
    // The pet stays as its order left it, and a new order gets a new id.
    assert.equal(await petStatus(p.id), 'available');
    const next = (await order(p.id)).json();
    assert.ok(next.id > placed.id, `${next.id} after ${placed.id}`);
    await move(next.id, 'approved');
    await move(next.id, 'delivered');
    assert.equal((await remove(next.id)).statusCode, 204);
    assert.equal(await petStatus(p.id), 'sold');

    const events = (await as(t.app, owner, { method: 'GET', url: '/v1/events?limit=100' })).json();
    const deleted = events.filter((e: { type: string }) => e.type === 'order.deleted');
    assert.deepEqual(
      deleted.map((e: { data: { id: number; status: string } }) => [e.data.id, e.data.status]),
      [
        [placed.id, 'cancelled'],
        [next.id, 'delivered'],
      ],
    );
  });

  it("answers 404 for another account's pet or order", async () => {
    const p = await pet();
    const id = (await order(p.id)).json().id;
    const intruder = await newTenant(t.app);
    assert.equal((await order(p.id, intruder)).statusCode, 404);
    const read = await as(t.app, intruder, { method: 'GET', url: `/v1/store/orders/${id}` });
    assert.equal(read.statusCode, 404);
    const patch = await move(id, 'cancelled', intruder);
    assert.equal(patch.statusCode, 404);
    const list = await as(t.app, intruder, { method: 'GET', url: '/v1/store/orders' });
    assert.deepEqual(list.json(), []);
    assert.deepEqual(
      (await as(t.app, intruder, { method: 'GET', url: '/v1/store/inventory' })).json(),
      { available: 0, pending: 0, sold: 0 },
    );
    assert.equal(await petStatus(p.id), 'pending');
  });

  it('refuses bad input with 400 and writes nothing', async () => {
    const tenant = await newTenant(t.app);
    const bodies = [
      '{}',
      '{"petId":"1"}',
      '{"petId":1.5}',
      '{"petId":0}',
      '{"petId":1,"x":1}',
      '[]',
    ];
    for (const payload of bodies) {
      const res = await as(t.app, tenant, {
        method: 'POST',
        url: '/v1/store/orders',
        payload,
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.statusCode, 400, payload);
      assert.equal(errorCode(res), 'validation_failed');
    }
    const p = await pet();
    const id = (await order(p.id)).json().id;
    for (const status of ['shipped', '', 1]) {
      const res = await as(t.app, owner, {
        method: 'PATCH',
        url: `/v1/store/orders/${id}`,
        payload: { status },
      });
      assert.equal(res.statusCode, 400);
    }
    assert.equal(
      (await as(t.app, tenant, { method: 'GET', url: '/v1/store/orders' })).json().length,
      0,
    );
    assert.equal(
      (await as(t.app, owner, { method: 'GET', url: '/v1/store/orders/abc' })).statusCode,
      400,
    );
  });
});
