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

type Pet = { id: number; name: string; categoryId: number; status: string };

describe('pets', () => {
  let t: TestApp;
  let owner: Tenant;
  let categoryId: number;

  before(async () => {
    t = await startApp();
    owner = await newTenant(t.app);
    categoryId = (await createCategory(t.app, owner)).id;
  });
  after(() => t.close());

  it('creates a pet with status available by default and reads it back', async () => {
    const res = await as(t.app, owner, {
      method: 'POST',
      url: '/v1/pets',
      payload: { name: 'Rex', categoryId },
    });
    assert.equal(res.statusCode, 201);
    const pet = res.json();
    assert.deepEqual(Object.keys(pet).sort(), ['categoryId', 'id', 'name', 'status']);
    assert.equal(pet.status, 'available');
    assert.equal(pet.name, 'Rex');
    assert.equal(res.headers.location, `http://localhost/v1/pets/${pet.id}`);

    const read = await as(t.app, owner, { method: 'GET', url: `/v1/pets/${pet.id}` });
    assert.equal(read.statusCode, 200);
    assert.deepEqual(read.json(), pet);
  });

  it('reads pets by id (?id=1&id=7), with status and pages, and refuses bad id lists', async () => {
    const tenant = await newTenant(t.app);
    const category = (await createCategory(t.app, tenant)).id;
    const made = [];
    for (const status of ['available', 'sold', 'available', 'sold']) {
      made.push(await createPet(t.app, tenant, { categoryId: category, status }));
    }
    const [a, b, c, d] = made as [Pet, Pet, Pet, Pet];
    const list = (query: string) => as(t.app, tenant, { url: `/v1/pets?${query}` });
    const ids = (res: { json: () => unknown }) => (res.json() as Pet[]).map((p) => p.id);
    assert.deepEqual((await list(`id=${c.id}`)).json(), [c], 'one id');
    assert.deepEqual(ids(await list(`id=${d.id}&id=${a.id}&id=${a.id}`)), [a.id, d.id], 'by id');
    assert.deepEqual(ids(await list(`id=${a.id}&id=${b.id}&id=${d.id}&status=sold`)), [b.id, d.id]);
    assert.deepEqual(ids(await list('id=999999')), [], "an id this account doesn't have");
    // Another account's pets are not read by id either.
    const other = await newTenant(t.app);
    const theirs = await createPet(t.app, other, {
      categoryId: (await createCategory(t.app, other)).id,
      name: 'Theirs',
    });
    const mine = await as(t.app, tenant, { url: `/v1/pets?id=${theirs.id}` });
    assert.ok(!(mine.json() as Pet[]).some((p) => p.name === 'Theirs'));
    // Pages: two ids a page, the next linked.
    const first = await list(`id=${a.id}&id=${b.id}&id=${c.id}&limit=2`);
    assert.deepEqual(ids(first), [a.id, b.id]);
    const next = nextLinkUrl(first);
    assert.ok(next);
    assert.equal(next.searchParams.getAll('id').length, 3, 'the next page keeps the ids');
    assert.deepEqual(ids(await as(t.app, tenant, { url: pathOf(next) })), [c.id]);
    // Bad lists: 400 validation_failed.
    const many = Array.from({ length: 101 }, (_, i) => `id=${i + 1}`).join('&');
    for (const query of ['id=0', 'id=abc', 'id=1&id=x', 'id=', many]) {
      const res = await list(query);
      assert.equal(res.statusCode, 400, query);
      assert.equal(errorCode(res), 'validation_failed', query);
    }
  });

  it('keeps a given status and odd but valid Unicode names', async () => {
    const name = 'Ñandú 🐦 — «Zoë»';
    const pet = await createPet(t.app, owner, { name, categoryId, status: 'pending' });
    assert.equal(pet.status, 'pending');
    assert.equal(pet.name, name);
  });

  it('answers 404 for a pet that does not exist', async () => {
    const res = await as(t.app, owner, { method: 'GET', url: '/v1/pets/987654321' });
    assert.equal(res.statusCode, 404);
    assert.equal(errorCode(res), 'not_found');
  });

  it('refuses an unknown category with 400 unknown_category and writes nothing', async () => {
    const tenant = await newTenant(t.app);
    const res = await as(t.app, tenant, {
      method: 'POST',
      url: '/v1/pets',
      payload: { name: 'Ghost', categoryId: 424242 },
    });
    assert.equal(res.statusCode, 400);
    assert.equal(errorCode(res), 'unknown_category');
    const list = await as(t.app, tenant, { method: 'GET', url: '/v1/pets' });
    assert.deepEqual(list.json(), []);
  });

  it('commits concurrent creations together, refusing only the bad ones among them', async () => {
    const tenant = await newTenant(t.app);
    const category = await createCategory(t.app, tenant);
    // Sent at once, so on SQLite they share one group commit.
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        as(t.app, tenant, {
          method: 'POST',
          url: '/v1/pets',
          payload: { name: `Batch ${i}`, categoryId: i % 2 ? 424242 : category.id },
        }),
      ),
    );
    assert.deepEqual(
      answers.map((a) => a.statusCode),
      answers.map((_, i) => (i % 2 ? 400 : 201)),
    );
    const list = await as(t.app, tenant, { method: 'GET', url: '/v1/pets' });
    assert.deepEqual(
      list
        .json()
        .map((p: { name: string }) => p.name)
        .sort(),
      answers.flatMap((a) => (a.statusCode === 201 ? [a.json().name] : [])).sort(),
    );
  });

  it("refuses another account's category as unknown", async () => {
    const other = await newTenant(t.app);
    const res = await as(t.app, other, {
      method: 'POST',
      url: '/v1/pets',
      payload: { name: 'Thief', categoryId },
    });
    assert.equal(res.statusCode, 400);
    assert.equal(errorCode(res), 'unknown_category');
  });

  it('updates fields partially and deletes', async () => {
    const pet = await createPet(t.app, owner, { name: 'Old', categoryId });
    const other = await createCategory(t.app, owner, 'Cats');
    const res = await as(t.app, owner, {
      method: 'PATCH',
      url: `/v1/pets/${pet.id}`,
      payload: { name: 'New', categoryId: other.id },
    });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), {
      id: pet.id,
      name: 'New',
      categoryId: other.id,
      status: 'available',
    });

    const bad = await as(t.app, owner, {
      method: 'PATCH',
      url: `/v1/pets/${pet.id}`,
      payload: { categoryId: 999999 },
    });
    assert.equal(bad.statusCode, 400);
    assert.equal(errorCode(bad), 'unknown_category');

    const del = await as(t.app, owner, { method: 'DELETE', url: `/v1/pets/${pet.id}` });
    assert.equal(del.statusCode, 204);
    assert.equal(del.body, '');
    const again = await as(t.app, owner, { method: 'DELETE', url: `/v1/pets/${pet.id}` });
    assert.equal(again.statusCode, 404);
    const gone = await as(t.app, owner, { method: 'GET', url: `/v1/pets/${pet.id}` });
    assert.equal(gone.statusCode, 404);
  });

  describe('status life cycle', () => {
    const allowed: Array<[string, string]> = [
      ['available', 'pending'],
      ['available', 'sold'],
      ['pending', 'available'],
      ['pending', 'sold'],
      ['available', 'available'],
    ];
    const refused: Array<[string, string]> = [
      ['sold', 'available'],
      ['sold', 'pending'],
    ];

    for (const [from, to] of allowed) {
      it(`allows ${from} → ${to}`, async () => {
        const pet = await createPet(t.app, owner, { categoryId, status: from });
        const res = await as(t.app, owner, {
          method: 'PATCH',
          url: `/v1/pets/${pet.id}`,
          payload: { status: to },
        });
        assert.equal(res.statusCode, 200);
        assert.equal(res.json().status, to);
      });
    }

    for (const [from, to] of refused) {
      it(`refuses ${from} → ${to} with 409 invalid_transition and changes nothing`, async () => {
        const pet = await createPet(t.app, owner, { categoryId, status: from });
        const res = await as(t.app, owner, {
          method: 'PATCH',
          url: `/v1/pets/${pet.id}`,
          payload: { status: to, name: 'Renamed' },
        });
        assert.equal(res.statusCode, 409);
        assert.equal(errorCode(res), 'invalid_transition');
        const read = await as(t.app, owner, { method: 'GET', url: `/v1/pets/${pet.id}` });
        assert.deepEqual(read.json(), pet);
      });
    }
  });

  describe('listing', () => {
    let tenant: Tenant;
    const ids: number[] = [];

    before(async () => {
      tenant = await newTenant(t.app);
      const category = await createCategory(t.app, tenant);
      const statuses = ['available', 'pending', 'sold'];
      for (let i = 0; i < 25; i++) {
        const pet = await createPet(t.app, tenant, {
          name: `Pet ${i}`,
          categoryId: category.id,
          status: statuses[i % 3],
        });
        ids.push(pet.id);
      }
    });

    it('returns a bare array of 20 by default, ordered by id, with a next link', async () => {
      const res = await as(t.app, tenant, { method: 'GET', url: '/v1/pets' });
      assert.equal(res.statusCode, 200);
      const page = res.json();
      assert.ok(Array.isArray(page));
      assert.deepEqual(
        page.map((p: { id: number }) => p.id),
        ids.slice(0, 20),
      );
      assert.match(
        String(res.headers.link),
        /^<http:\/\/[^>]+\/v1\/pets\?[^>]*cursor=[^>]+>; rel="next"$/,
      );
    });

    it('walks every page through the Link header, without repeats, to a last page without one', async () => {
      const seen: number[] = [];
      let url: string | undefined = '/v1/pets?limit=7';
      let pages = 0;
      while (url) {
        const res = await as(t.app, tenant, { method: 'GET', url });
        assert.equal(res.statusCode, 200);
        seen.push(...res.json().map((p: { id: number }) => p.id));
        const next = nextLinkUrl(res);
        url = next && pathOf(next);
        pages++;
      }
      assert.equal(pages, 4);
      assert.deepEqual(seen, ids);
    });

    it('filters by status and keeps the filter in the next link', async () => {
      const res = await as(t.app, tenant, { method: 'GET', url: '/v1/pets?status=sold&limit=3' });
      const page = res.json();
      assert.equal(page.length, 3);
      assert.ok(page.every((p: { status: string }) => p.status === 'sold'));
      const next = nextLinkUrl(res) ?? new URL('http://missing.invalid/');
      assert.equal(next.searchParams.get('status'), 'sold');
      assert.equal(next.searchParams.get('limit'), '3');
      const rest = await as(t.app, tenant, { method: 'GET', url: pathOf(next) });
      const second = rest.json();
      assert.equal(second.length, 3);
      assert.ok(second.every((p: { status: string }) => p.status === 'sold'));
      assert.ok(second[0].id > page[2].id);
    });

    it('accepts limit 1 and 100 and refuses 0, 101 and abc', async () => {
      for (const limit of ['1', '100']) {
        const res = await as(t.app, tenant, { method: 'GET', url: `/v1/pets?limit=${limit}` });
        assert.equal(res.statusCode, 200);
        assert.equal(res.json().length, Math.min(Number(limit), ids.length));
      }
      for (const limit of ['0', '101', 'abc', '1.5', '-1']) {
        const res = await as(t.app, tenant, { method: 'GET', url: `/v1/pets?limit=${limit}` });
        assert.equal(res.statusCode, 400, `limit=${limit}`);
        assert.equal(errorCode(res), 'validation_failed');
      }
    });

    it('refuses an unknown status and a garbage cursor', async () => {
      const status = await as(t.app, tenant, { method: 'GET', url: '/v1/pets?status=lost' });
      assert.equal(status.statusCode, 400);
      for (const cursor of [
        'garbage',
        'azEuMA',
        '%00',
        'x'.repeat(65),
        Buffer.from('k1.-5').toString('base64url'),
      ]) {
        const res = await as(t.app, tenant, {
          method: 'GET',
          url: `/v1/pets?cursor=${encodeURIComponent(cursor)}`,
        });
        assert.equal(res.statusCode, 400, `cursor=${cursor}`);
        assert.match(errorCode(res), /^(invalid_cursor|validation_failed)$/);
      }
    });

    it('shows an account only its own pets', async () => {
      const other = await newTenant(t.app);
      const res = await as(t.app, other, { method: 'GET', url: '/v1/pets' });
      assert.deepEqual(res.json(), []);
      assert.equal(res.headers.link, undefined);
    });
  });
});
