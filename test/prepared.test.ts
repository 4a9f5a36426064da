import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { createCategory } from '../src/catalogue/categories.js';
import { systemClock } from '../src/clock.js';
import type { Database } from '../src/store/database.js';
import { preparedQuery, preparedWrite } from '../src/store/prepared.js';
import { sqliteDatabaseUrl, storeWithAccount, testDatabaseUrl } from './helpers.js';

// Prepared queries take named parameters; which placeholder is which is read from the
// compiled SQL. SQLite always, PostgreSQL when TEST_DATABASE_URL is set.
const targets = [{ name: 'sqlite', url: sqliteDatabaseUrl }];
if (process.env.TEST_DATABASE_URL) targets.push({ name: 'postgres', url: testDatabaseUrl });

const categories = preparedQuery(
  (db, p: { accountId: string; after: number; name: string; take: number }) =>
    db
      .selectFrom('categories')
      .select(['id', 'name'])
      // Used in another order than declared: the names decide.
      .where('name', '=', p.name)
      .where('id', '>', p.after)
      .where('account_id', '=', p.accountId)
      .orderBy('id')
      .limit(p.take),
);

/** Calls that must not compile: tsc (npm run lint) fails if any of these lines compiles. */
export function misuses(database: Database): void {
  // @ts-expect-error a missing name
  void categories(database.reader, { accountId: 'a', after: 0, name: 'n' });
  // @ts-expect-error a misspelled name
  void categories(database.reader, { acountId: 'a', after: 0, name: 'n', take: 1 });
  // @ts-expect-error positional parameters
  void categories(database.reader, ['a', 0, 'n', 1]);
  // @ts-expect-error a value of the wrong type
  void categories(database.reader, { accountId: 'a', after: '0', name: 'n', take: 1 });
}

for (const target of targets) {
  describe(`prepared queries on ${target.name}`, () => {
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
      cleanup();
    });

    it('binds each value by its name, whatever order the SQL uses them in', async () => {
      const made = await database.write(
        async (tx) => [
          await createCategory(tx, systemClock, accountId, 'Named'),
          await createCategory(tx, systemClock, accountId, 'Named'),
          await createCategory(tx, systemClock, accountId, 'Other'),
        ],
        { numbersFor: accountId },
      );
      const [first, second] = made;
      assert.ok(first && second);
      const all = { accountId, after: 0, name: 'Named', take: 10 };
      assert.deepEqual(await categories(database.reader, all), [first, second]);
      assert.deepEqual(await categories(database.reader, { ...all, take: 1 }), [first]);
      assert.deepEqual(await categories(database.reader, { ...all, after: first.id }), [second]);
      // The same query inside a write runs on the batch's connection (directly, on SQLite).
      assert.deepEqual(await database.write((tx) => categories(tx, { ...all, take: 1 })), [first]);
    });

    it('refuses a builder that binds a constant, or does not bind a parameter it used', async () => {
      const constant = preparedQuery((db, p: { accountId: string }) =>
        db.selectFrom('pets').select('id').where('account_id', '=', p.accountId).limit(1),
      );
      await assert.rejects(constant(database.reader, { accountId }), /no named parameter/);
      const unbound = preparedQuery((db, p: { take: number }) =>
        db
          .selectFrom('pets')
          .select('id')
          .limit(sql.lit(Number(p.take) || 1)),
      );
      await assert.rejects(unbound(database.reader, { take: 1 }), /take is not bound/);
      // Constants written into the SQL are fine.
      const literal = preparedQuery((db, p: { accountId: string }) =>
        db.selectFrom('pets').select('id').where('account_id', '=', p.accountId).limit(sql.lit(1)),
      );
      assert.deepEqual(await literal(database.reader, { accountId }), []);
    });

    it('prepares hot writes on the PostgreSQL server, once per connection', {
      skip: target.name !== 'postgres' && 'PostgreSQL only',
    }, async () => {
      const rename = preparedWrite((tx, p: { accountId: string; name: string }) =>
        tx
          .updateTable('categories')
          .set({ name: p.name })
          .where('account_id', '=', p.accountId)
          .returning(['id', 'name']),
      );
      for (const name of ['First', 'Second']) {
        await database.write((tx) => rename(tx, { accountId, name }));
      }
      // The session's prepared statements, seen on group commit's own connection.
      const statements = await database.write(async (tx) => {
        const { rows } = await sql<{ statement: string; calls: string }>`
          select statement, generic_plans + custom_plans as calls
          from pg_prepared_statements where statement like 'update "categories"%'`.execute(tx);
        return rows;
      });
      assert.equal(statements.length, 1, 'one statement, prepared once');
      assert.ok(Number(statements[0]?.calls) >= 2, 'and run from its preparation since');
      // A write returning `*` is refused: its plan would break when a column is added.
      const everything = preparedWrite((tx, p: { accountId: string }) =>
        tx.deleteFrom('categories').where('account_id', '=', p.accountId).returningAll(),
      );
      await assert.rejects(
        database.write((tx) => everything(tx, { accountId })),
        /names the columns it returns/,
      );
    });
  });
}
