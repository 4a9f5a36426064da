import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createCategory, removeCategory } from '../src/catalogue/categories.js';
import { createPet, listPetPage, updatePet } from '../src/catalogue/pets.js';
import { systemClock } from '../src/clock.js';
import { createAccount } from '../src/domain/accounts.js';
import { claimDue, findMessage, insertMessage, settle } from '../src/messages/repository.js';
import { commit } from '../src/store/change.js';
import type { Database } from '../src/store/database.js';
import { numberedPage } from '../src/store/numbered.js';
import type { MessageStatus } from '../src/store/tables.js';
import { sqliteDatabaseUrl, storeWithAccount, testDatabaseUrl, testPasswords } from './helpers.js';

// Services and repositories straight on the database: SQLite always, PostgreSQL when
// TEST_DATABASE_URL is set.
const targets: Array<{ name: string; url: () => { url: string; cleanup: () => void } }> = [
  {
    name: 'sqlite',
    url: sqliteDatabaseUrl,
  },
];
if (process.env.TEST_DATABASE_URL) targets.push({ name: 'postgres', url: testDatabaseUrl });

for (const target of targets) {
  describe(`store on ${target.name}`, () => {
    let database: Database;
    let cleanup: () => void;
    let accountId: string;

    before(async () => {
      const made = target.url();
      cleanup = made.cleanup;
      ({ database, accountId } = await storeWithAccount(made.url));
    });
    after(async () => {
      await database.close();
      await database.close(); // closing twice is safe
      cleanup();
    });

    it('runs migrations again as a no-op', async () => {
      assert.deepEqual(await database.schema.migrate(), []);
    });

    it('returns ids as numbers and pages by keyset', async () => {
      const category = await database.write(
        (tx) => createCategory(tx, systemClock, accountId, 'Dogs'),
        { numbersFor: accountId },
      );
      assert.equal(typeof category.id, 'number');
      const ids: number[] = [];
      for (let i = 0; i < 5; i++) {
        const pet = await database.write(
          (tx) =>
            createPet(tx, systemClock, accountId, {
              name: `P${i}`,
              categoryId: category.id,
            }),
          { numbersFor: accountId },
        );
        assert.ok(pet.ok);
        ids.push(pet.value.id);
      }
      const first = await listPetPage(database.reader, accountId, { limit: 2 });
      assert.ok(first.ok);
      assert.deepEqual(
        first.value.items.map((p) => p.id),
        ids.slice(0, 2),
      );
      const second = await listPetPage(database.reader, accountId, {
        limit: 10,
        cursor: first.value.nextCursor ?? '',
      });
      assert.ok(second.ok);
      assert.deepEqual(
        second.value.items.map((p) => p.id),
        ids.slice(2),
      );
      assert.equal(second.value.nextCursor, null);
    });

    it('lets exactly one of two racing status changes from the same state win', async () => {
      const category = await database.write(
        (tx) => createCategory(tx, systemClock, accountId, 'Race'),
        { numbersFor: accountId },
      );
      const pet = await database.write(
        (tx) =>
          createPet(tx, systemClock, accountId, {
            name: 'R',
            categoryId: category.id,
            status: 'pending',
          }),
        { numbersFor: accountId },
      );
      assert.ok(pet.ok);
      const [a, b] = await Promise.all([
        commit(database, updatePet(systemClock, accountId, pet.value.id, { status: 'sold' })),
        commit(database, updatePet(systemClock, accountId, pet.value.id, { status: 'available' })),
      ]);
      // Both moves are legal from pending; whichever lands second is judged against the new
      // status: sold → available is refused, available → sold is allowed.
      const outcomes = [a, b].map((r) => (r.ok ? r.value.status : r.code)).sort();
      assert.ok(
        JSON.stringify(outcomes) === JSON.stringify(['invalid_transition', 'sold']) ||
          JSON.stringify(outcomes) === JSON.stringify(['available', 'sold']),
        JSON.stringify(outcomes),
      );
    });

    it('claims run-out leases first, then due messages oldest first, up to the limit', async () => {
      const at = (minute: number) => new Date(Date.UTC(2000, 0, 1, 0, minute)).toISOString();
      const add = (
        id: string,
        status: MessageStatus,
        availableMinute: number,
        leaseMinute?: number,
      ) =>
        database.write((tx) =>
          insertMessage(tx, {
            id,
            account_id: accountId,
            message: id,
            status,
            attempts: status === 'processing' ? 1 : 0,
            available_at: at(availableMinute),
            lease_token: leaseMinute === undefined ? null : 'old',
            lease_until: leaseMinute === undefined ? null : at(leaseMinute),
            failure_reason: null,
            created_at: at(0),
            updated_at: at(0),
            traceparent: null,
          }),
        );
      // A shared PostgreSQL database may hold this test's rows from a run that stopped halfway
      // (no other test writes messages this old): they would be claimed here.
      await database.write((tx) =>
        tx.deleteFrom('messages').where('created_at', '=', at(0)).execute(),
      );
      const tag = randomUUID().slice(0, 8);
      // Inserted out of order: the claim orders by available_at, not by insertion.
      await add(`${tag}-q3`, 'queued', 3);
      await add(`${tag}-q1`, 'queued', 1);
      await add(`${tag}-q2`, 'queued', 2);
      await add(`${tag}-later`, 'queued', 50);
      await add(`${tag}-expired`, 'processing', 0, 5);
      await add(`${tag}-held`, 'processing', 0, 40);
      const lease = (token: string) => ({ token, now: at(10), until: at(11) });

      // Which messages are taken is the contract; the order rows come back in is not.
      const first = await database.write((tx) => claimDue(tx, lease('a'), 3));
      assert.deepEqual(first.map((m) => m.id).sort(), [`${tag}-expired`, `${tag}-q1`, `${tag}-q2`]);
      assert.ok(first.every((m) => m.status === 'processing' && m.lease_token === 'a'));
      assert.equal(first.find((m) => m.id === `${tag}-expired`)?.attempts, 2);
      const rest = await database.write((tx) => claimDue(tx, lease('b'), 10));
      assert.deepEqual(
        rest.map((m) => m.id),
        [`${tag}-q3`],
      );

      assert.equal(
        await database.write((tx) =>
          settle(tx, `${tag}-q1`, 'b', { status: 'sent', updated_at: at(10) }),
        ),
        false,
      );
      assert.equal(
        await database.write((tx) =>
          settle(tx, `${tag}-q1`, 'a', { status: 'sent', updated_at: at(10) }),
        ),
        true,
      );
      const sent = await findMessage(database.reader, accountId, `${tag}-q1`);
      assert.equal(sent?.status, 'sent');
      assert.equal(sent?.lease_token, null);
      assert.equal(new Date(sent?.available_at ?? '').toISOString(), at(1), 'kept when not given');
    });

    it('keeps the category foreign key per account', async () => {
      const other = await createAccount(database, systemClock, testPasswords, {
        email: `repo-other-${randomUUID()}@example.com`,
        password: 'long enough password',
      });
      assert.ok(other.ok);
      // Ids are numbered per account: one the other account has and this one has not.
      const mineBefore = await numberedPage(database.reader, 'categories', accountId, {
        afterId: 0,
        take: 1000,
      });
      let theirs = { id: 0 };
      while (mineBefore.some((c) => c.id >= theirs.id)) {
        theirs = await database.write(
          (tx) => createCategory(tx, systemClock, other.value.id, 'Theirs'),
          { numbersFor: other.value.id },
        );
      }
      const pet = await database.write(
        (tx) =>
          createPet(tx, systemClock, accountId, {
            name: 'X',
            categoryId: theirs.id,
          }),
        { numbersFor: accountId },
      );
      assert.deepEqual(pet.ok ? 'created' : pet.code, 'unknown_category');
      const mine = await database.write(
        (tx) => createCategory(tx, systemClock, accountId, 'Mine'),
        { numbersFor: accountId },
      );
      await database.write(
        (tx) => createPet(tx, systemClock, accountId, { name: 'Y', categoryId: mine.id }),
        { numbersFor: accountId },
      );
      const removed = await commit(database, removeCategory(accountId, mine.id));
      assert.deepEqual(removed.ok ? 'removed' : removed.code, 'category_in_use');
    });
  });
}
