import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import { createCategory } from '../src/catalogue/categories.js';
import { insertPet } from '../src/catalogue/pets-repository.js';
import { systemClock } from '../src/clock.js';
import type { Database, Tx } from '../src/store/database.js';
import { findNumbered } from '../src/store/numbered.js';
import type { Tables } from '../src/store/tables.js';
import { sqliteDatabaseUrl, storeWithAccount } from './helpers.js';

const row = (accountId: string, categoryId: number) => {
  const at = new Date().toISOString();
  return {
    account_id: accountId,
    name: 'Handle',
    category_id: categoryId,
    status: 'available' as const,
    created_at: at,
    updated_at: at,
  };
};

/**
 * Uses of the store's handles that must not compile: `tsc` (npm run lint) fails on any line
 * below whose `@ts-expect-error` finds no error. Never called; on SQLite most would deadlock.
 */
export function misuses(database: Database, raw: Kysely<Tables>, accountId: string): void {
  void database.write(
    async (tx) => {
      // The reader where a write's handle is required.
      // @ts-expect-error a ReadDb is not a Tx
      await insertPet(database.reader, row(accountId, 1));
      // A handle made outside the store (or one the store keeps to itself).
      // @ts-expect-error a Kysely is not a Tx
      await insertPet(raw, row(accountId, 1));
      // @ts-expect-error a Kysely is not a ReadDb either
      await findNumbered(raw, 'pets', accountId, 1);
      // There is no outer writing handle to capture.
      // @ts-expect-error Database has no `db`
      await insertPet(database.db, row(accountId, 1));
      // Nor a transaction or a connection to start from the work's own handle.
      // @ts-expect-error a Tx starts no transaction
      await tx.transaction().execute(async () => {});
      // @ts-expect-error a Tx takes no connection
      await tx.connection().execute(async () => {});
      // The reader changes nothing.
      // @ts-expect-error a ReadDb has no insertInto
      await database.reader.insertInto('pets').values(row(accountId, 1)).execute();
    },
    { numbersFor: accountId },
  );
}

describe('store handles', () => {
  const file = sqliteDatabaseUrl();
  let database: Database;
  let accountId: string;
  before(async () => {
    ({ database, accountId } = await storeWithAccount(file.url));
  });
  after(async () => {
    await database.close();
    file.cleanup();
  });

  it('lets a write read through its own handle, and see its own uncommitted rows', async () => {
    const seen = await database.write(
      async (tx: Tx) => {
        const category = await createCategory(tx, systemClock, accountId, 'Handles');
        const pet = await insertPet(tx, row(accountId, category.id));
        // A Tx is a ReadDb: reads in a write see the write itself.
        return findNumbered(tx, 'pets', accountId, pet.id);
      },
      { numbersFor: accountId },
    );
    assert.ok(seen);
    assert.equal((await findNumbered(database.reader, 'pets', accountId, seen.id))?.name, 'Handle');
  });
});
