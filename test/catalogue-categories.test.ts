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

describe('categories', () => {
  let t: TestApp;
  let owner: Tenant;
  before(async () => {
    t = await startApp();
    owner = await newTenant(t.app);
  });
  after(() => t.close());

  it('creates, reads, renames and deletes a category', async () => {
    const created = await as(t.app, owner, {
      method: 'POST',
      url: '/v1/categories',
      payload: { name: 'Reptiles' },
    });
    assert.equal(created.statusCode, 201);
    const category = created.json();
    assert.deepEqual(Object.keys(category).sort(), ['id', 'name']);
    assert.equal(created.headers.location, `http://localhost/v1/categories/${category.id}`);

    const read = await as(t.app, owner, { method: 'GET', url: `/v1/categories/${category.id}` });
    assert.deepEqual(read.json(), category);

    const renamed = await as(t.app, owner, {
      method: 'PATCH',
      url: `/v1/categories/${category.id}`,
      payload: { name: 'Lizards' },
    });
    assert.equal(renamed.statusCode, 200);
    assert.deepEqual(renamed.json(), { id: category.id, name: 'Lizards' });

    const unchanged = await as(t.app, owner, {
      method: 'PATCH',
      url: `/v1/categories/${category.id}`,
      payload: {},
    });
    assert.deepEqual(unchanged.json(), { id: category.id, name: 'Lizards' });

    const del = await as(t.app, owner, { method: 'DELETE', url: `/v1/categories/${category.id}` });
    assert.equal(del.statusCode, 204);
    const gone = await as(t.app, owner, { method: 'GET', url: `/v1/categories/${category.id}` });
    assert.equal(gone.statusCode, 404);
    assert.equal(errorCode(gone), 'not_found');
  });

  it('refuses to delete a category that still has pets, then allows it once empty', async () => {
    const category = await createCategory(t.app, owner, 'Fish');
    const pet = await createPet(t.app, owner, { categoryId: category.id });
    const refused = await as(t.app, owner, {
      method: 'DELETE',
      url: `/v1/categories/${category.id}`,
    });
    assert.equal(refused.statusCode, 409);
    assert.equal(errorCode(refused), 'category_in_use');
    const still = await as(t.app, owner, { method: 'GET', url: `/v1/pets/${pet.id}` });
    assert.equal(still.statusCode, 200);

    await as(t.app, owner, { method: 'DELETE', url: `/v1/pets/${pet.id}` });
    const ok = await as(t.app, owner, { method: 'DELETE', url: `/v1/categories/${category.id}` });
    assert.equal(ok.statusCode, 204);
  });

  it('lists categories by id in pages linked by rel="next"', async () => {
    const tenant = await newTenant(t.app);
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createCategory(t.app, tenant, `C${i}`)).id);
    const first = await as(t.app, tenant, { method: 'GET', url: '/v1/categories?limit=3' });
    assert.deepEqual(
      first.json().map((c: { id: number }) => c.id),
      ids.slice(0, 3),
    );
    const next = nextLinkUrl(first) ?? new URL('http://missing.invalid/');
    const second = await as(t.app, tenant, { method: 'GET', url: pathOf(next) });
    assert.deepEqual(
      second.json().map((c: { id: number }) => c.id),
      ids.slice(3),
    );
    assert.equal(second.headers.link, undefined);
  });

  it("hides other accounts' categories", async () => {
    const category = await createCategory(t.app, owner, 'Private');
    const other = await newTenant(t.app);
    const list = await as(t.app, other, { method: 'GET', url: '/v1/categories' });
    assert.deepEqual(list.json(), []);
    const read = await as(t.app, other, { method: 'GET', url: `/v1/categories/${category.id}` });
    assert.equal(read.statusCode, 404);
  });
});
