import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { insertCategory } from '../src/catalogue/categories-repository.js';
import { createPet } from '../src/catalogue/pets.js';
import { listPets } from '../src/catalogue/pets-repository.js';
import { systemClock } from '../src/clock.js';
import { createAccount } from '../src/domain/accounts.js';
import { type Database, openDatabase } from '../src/store/database.js';
import { reserveNumbers } from '../src/store/numbered.js';
import {
  as,
  createCategory,
  createPet as createPetThroughApi,
  dialects,
  emptyDatabase,
  newTenant,
  startApp,
  type TestApp,
  testPasswords,
} from './helpers.js';

// Ids of categories, pets and orders are numbered per account (src/store/numbered.ts).

describe('per-account ids through the API', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it("numbers a new account's first category, pet and order 1, whatever others did", async () => {
    const busy = await newTenant(t.app);
    const busyCategory = await createCategory(t.app, busy);
    for (let i = 0; i < 3; i++)
      await createPetThroughApi(t.app, busy, { categoryId: busyCategory.id });

    const fresh = await newTenant(t.app);
    const category = await createCategory(t.app, fresh);
    assert.equal(category.id, 1);
    const pet = await createPetThroughApi(t.app, fresh, { categoryId: 1 });
    assert.equal(pet.id, 1);
    const order = await as(t.app, fresh, {
      method: 'POST',
      url: '/v1/store/orders',
      payload: { petId: 1 },
    });
    assert.equal(order.statusCode, 201, order.body);
    assert.equal(order.json().id, 1);

    // The busy account goes on from its own numbers, and pet 1 is each account's own.
    assert.equal((await createPetThroughApi(t.app, busy, { categoryId: busyCategory.id })).id, 4);
    const mine = await as(t.app, fresh, { url: '/v1/pets?limit=100' });
    assert.deepEqual(
      (mine.json() as Array<{ id: number; name: string }>).map((p) => p.id),
      [1],
    );
  });

  it('never gives a number twice, even after its row is deleted', async () => {
    const tenant = await newTenant(t.app);
    const category = await createCategory(t.app, tenant);
    const first = await createPetThroughApi(t.app, tenant, { categoryId: category.id });
    const gone = await as(t.app, tenant, { method: 'DELETE', url: `/v1/pets/${first.id}` });
    assert.equal(gone.statusCode, 204);
    const next = await createPetThroughApi(t.app, tenant, { categoryId: category.id });
    assert.equal(next.id, first.id + 1);
  });

  it('loses no number to a refused insert', async () => {
    const tenant = await newTenant(t.app);
    const category = await createCategory(t.app, tenant);
    const refused = await as(t.app, tenant, {
      method: 'POST',
      url: '/v1/pets',
      payload: { name: 'Nowhere', categoryId: category.id + 100 },
    });
    assert.equal(refused.statusCode, 400);
    assert.equal((await createPetThroughApi(t.app, tenant, { categoryId: category.id })).id, 1);
  });
});

for (const dialect of dialects) {
  describe(`per-account ids, the migration (${dialect})`, () => {
    let own: { url: string; drop: () => Promise<void> };
    let database: Database;
    before(async () => {
      own = await emptyDatabase(dialect);
      database = openDatabase(own.url, { poolSize: 2 });
    });
    after(async () => {
      await database.close();
      await own.drop();
    });

    it("keeps every row's id, and numbers each account on from its highest", async () => {
      await database.schema.migrateTo('0005_portal_sessions');
      // Rows as the global counter numbered them, two accounts interleaved.
      const at = new Date().toISOString();
      const accounts = ['acct_migrate_a', 'acct_migrate_b'];
      await database.write(async (tx) => {
        for (const id of accounts) {
          await sql`insert into accounts (id, email, password_hash, plan, created_at)
            values (${id}, ${`${id}@example.com`}, 'x', 'free', ${at})`.execute(tx);
        }
        const [a, b] = accounts;
        for (const [id, account] of [
          [1, a],
          [2, b],
          [3, a],
        ] as const) {
          await sql`insert into categories (id, account_id, name, created_at)
            values (${id}, ${account}, ${`c${id}`}, ${at})`.execute(tx);
        }
        for (const [id, account, category] of [
          [10, a, 1],
          [11, b, 2],
          [12, a, 3],
          [13, b, 2],
        ] as const) {
          await sql`insert into pets (id, account_id, name, category_id, status, created_at, updated_at)
            values (${id}, ${account}, ${`p${id}`}, ${category}, 'available', ${at}, ${at})`.execute(
            tx,
          );
        }
        await sql`insert into orders (id, account_id, pet_id, status, created_at, updated_at)
          values (7, ${b}, 13, 'placed', ${at}, ${at})`.execute(tx);
      });

      await database.schema.migrate();

      const [a, b] = accounts as [string, string];
      const ids = async (account: string) =>
        (await listPets(database.reader, account, { afterId: 0, take: 100 })).map((p) => p.id);
      assert.deepEqual(await ids(a), [10, 12]);
      assert.deepEqual(await ids(b), [11, 13]);
      const next = async (account: string, categoryId: number) => {
        const made = await database.write(
          (tx) => createPet(tx, systemClock, account, { name: 'After', categoryId }),
          { numbersFor: account },
        );
        assert.ok(made.ok, JSON.stringify(made));
        return made.value.id;
      };
      assert.equal(await next(a, 3), 13, 'a: after its highest pet, 12');
      assert.equal(await next(b, 2), 14, 'b: after its highest pet, 13');
      // The category key is per account: b has no category 3.
      const foreign = await database.write(
        (tx) => createPet(tx, systemClock, b, { name: 'Foreign', categoryId: 3 }),
        { numbersFor: b },
      );
      assert.equal(foreign.ok ? 'created' : foreign.code, 'unknown_category');
      // One open order per pet, per account: a's pet 13 is not b's.
      const counters = await sql<{ account_id: string; categories: number; orders: number }>`
        select account_id, categories, orders from id_counters order by account_id`.execute(
        database.reader,
      );
      assert.deepEqual(
        counters.rows.map((r) => [r.account_id, Number(r.categories), Number(r.orders)]),
        [
          [a, 3, 0],
          [b, 2, 7],
        ],
      );
    });

    it('reserves a run of numbers for a bulk load, and numbers on after it', async () => {
      const account = 'acct_migrate_a';
      const first = await database.write((tx) => reserveNumbers(tx, 'pets', account, 1000), {
        numbersFor: account,
      });
      assert.equal(first, 14, 'after pet 13, made above');
      const made = await database.write(
        (tx) => createPet(tx, systemClock, account, { name: 'After the run', categoryId: 1 }),
        { numbersFor: account },
      );
      assert.ok(made.ok);
      assert.equal(made.value.id, 1014);
    });
  });
}

describe('per-account ids: two instances numbering one account at once (PostgreSQL)', {
  skip: !process.env.TEST_DATABASE_URL && 'needs TEST_DATABASE_URL',
}, () => {
  let own: { url: string; drop: () => Promise<void> };
  let instances: Database[];
  before(async () => {
    own = await emptyDatabase('postgres');
    // A deadlock would not be broken within the test's time: it fails the test, not slows it.
    const admin = new pg.Client({ connectionString: own.url });
    await admin.connect();
    await admin.query(
      `alter database ${new URL(own.url).pathname.slice(1)} set deadlock_timeout = '10min'`,
    );
    await admin.end();
    instances = [0, 1].map(() => openDatabase(own.url, { poolSize: 2 }));
    await (instances[0] as Database).schema.migrate();
  });
  after(async () => {
    for (const database of instances) await database.close();
    await own.drop();
  });

  it('gives every number once, without gaps and without a deadlock', {
    // A deadlock is not broken by PostgreSQL here (deadlock_timeout, above) but by the
    // statement timeout, after 10 s: past this, the test fails rather than passes slowly.
    timeout: 8_000,
  }, async () => {
    const [first, second] = instances as [Database, Database];
    const accounts: string[] = [];
    const categories = new Map<string, number>();
    for (let i = 0; i < 3; i++) {
      const made = await createAccount(first, systemClock, testPasswords, {
        email: `ids-${randomUUID()}@example.com`,
        password: 'long enough password',
      });
      assert.ok(made.ok);
      accounts.push(made.value.id);
      const category = await first.write(
        (tx) => insertCategory(tx, made.value.id, 'c', new Date().toISOString()),
        { numbersFor: made.value.id },
      );
      categories.set(made.value.id, category.id);
    }
    // Both group commits connected first, so that their batches overlap.
    await Promise.all(
      instances.map((database, n) =>
        database.write(
          (tx) =>
            createPet(tx, systemClock, accounts[n] as string, {
              name: 'warm',
              categoryId: categories.get(accounts[n] as string) as number,
            }),
          { numbersFor: accounts[n] as string },
        ),
      ),
    );
    // Both instances write for every account at once, in opposite orders, each write followed
    // by a pause in the batch: without the batches' ordered locks, each would take a counter
    // the other then waits for (a deadlock PostgreSQL would not break within the test's time).
    const writes: Array<Promise<unknown>> = [];
    for (let round = 0; round < 40; round++) {
      for (const [n, database] of [first, second].entries()) {
        const order = n === 0 ? accounts : [...accounts].reverse();
        for (const account of order) {
          writes.push(
            database.write(
              (tx) =>
                createPet(tx, systemClock, account, {
                  name: `r${round}`,
                  categoryId: categories.get(account) as number,
                }),
              { blind: true, numbersFor: account },
            ),
          );
          if (round === 0) {
            writes.push(
              database.write((tx) => sql`select pg_sleep(0.05)`.execute(tx), {
                blind: true,
              }),
            );
          }
        }
      }
    }
    await Promise.all(writes);
    for (const account of accounts) {
      const ids = (await listPets(first.reader, account, { afterId: 0, take: 1000 })).map(
        (p) => p.id,
      );
      assert.deepEqual(
        ids,
        Array.from({ length: account === accounts[2] ? 80 : 81 }, (_, i) => i + 1),
      );
    }
  });
});
