import { type Insertable, PostgresAdapter, sql } from 'kysely';
import type { Tx } from './handles.js';
import { assertCountersHeld } from './pg-group-commit.js';
import { preparedWrite } from './prepared.js';
import type { Tables } from './tables.js';

/**
 * Tables whose rows are numbered per account: an account's categories, pets and orders are 1,
 * 2, 3… in the order they are committed, whatever other accounts do, so an id tells nothing
 * about anyone else's volume. `id_counters` holds each account's last number per table; a
 * number is never given twice, even after its row is deleted (an order keeps its pet's id).
 *
 * Numbers follow commit order on both stores, which the page cache relies on (an append lands
 * after every full page: src/http/freshness.ts):
 * - SQLite has one writer, and a write's insert and its counter's update are in one batch;
 * - on PostgreSQL the counter's row stays locked by the batch that moved it until that batch
 *   commits, so the next number of that account is taken only after. Every batch locks the
 *   counters of the accounts it numbers for first, in one order (WriteOptions.numbersFor), so
 *   batches of several instances wait for each other at worst, and never deadlock.
 */
export type NumberedTable = 'categories' | 'pets' | 'orders';

/** A numbered row as inserted: every column, the id aside. */
export type Unnumbered<T extends NumberedTable> = Omit<Insertable<Tables[T]>, 'id'> & {
  account_id: string;
};

/**
 * An insert of one row of `table`, numbered next in its account; answers the number. `columns`
 * are the row's columns but `account_id` and `id`, in the order they are written.
 */
export function numberedInsert<T extends NumberedTable>(
  table: T,
  columns: ReadonlyArray<Exclude<keyof Unnumbered<T>, 'account_id'> & string>,
) {
  type Row = Unnumbered<T> & Record<string, unknown>;
  const counter = sql.ref(table);
  const names = sql.join(['account_id', 'id', ...columns].map((c) => sql.ref(c)));
  const values = (p: Row) => sql.join(columns.map((c) => sql`${p[c]}`));

  // PostgreSQL: one statement, so it runs beside the batch's others; the counter's update
  // and the insert stand or fall together. The batch made the counter's row first (see
  // PgGroupCommit's lockCounters): a plain update, cheaper than an upsert.
  const together = preparedWrite((tx: Tx, p: Row) => ({
    compile: () =>
      sql<{ id: number }>`
        with n as (
          update id_counters set ${counter} = ${counter} + 1 where account_id = ${p.account_id}
          returning ${counter} as id
        )
        insert into ${sql.table(table)} (${names})
        values (${p.account_id}, (select id from n), ${values(p)})
        returning id`.compile(tx),
  }));
  // SQLite: the insert reads the next number, and only once it stands is the counter moved
  // (no number is lost to an insert refused by a foreign key). One writer: nothing between.
  const insert = preparedWrite((tx: Tx, p: Row) => ({
    compile: () =>
      sql`
        insert into ${sql.table(table)} (${names})
        values (
          ${p.account_id},
          coalesce((select ${counter} from id_counters where account_id = ${p.account_id}), 0) + 1,
          ${values(p)}
        )`.compile(tx),
  }));
  const moveOn = preparedWrite((tx: Tx, p: { account_id: string }) => ({
    compile: () =>
      sql<{ id: number }>`
        insert into id_counters (account_id, ${counter}) values (${p.account_id}, 1)
        on conflict (account_id) do update set ${counter} = ${counter} + 1
        returning ${counter} as id`.compile(tx),
  }));

  return async (tx: Tx, row: Unnumbered<T>): Promise<number> => {
    if (tx.getExecutor().adapter instanceof PostgresAdapter) {
      assertCountersHeld(tx, row.account_id);
      const [numbered] = await together(tx, row as Row);
      if (!numbered) throw new Error(`insert into ${table} returned no row`);
      return numbered.id;
    }
    await insert(tx, row as Row);
    const [moved] = await moveOn(tx, { account_id: row.account_id });
    if (!moved) throw new Error('the id counter returned no row');
    return moved.id;
  };
}

/**
 * Takes the next `count` numbers of an account's `table` at once, for rows the caller then
 * inserts with them (bulk loads); answers the first. Its write says `numbersFor` the account.
 */
export async function reserveNumbers(
  tx: Tx,
  table: NumberedTable,
  accountId: string,
  count: number,
): Promise<number> {
  if (tx.getExecutor().adapter instanceof PostgresAdapter) assertCountersHeld(tx, accountId);
  const counter = sql.ref(table);
  const { rows } = await sql<{ last: number }>`
    insert into id_counters as c (account_id, ${counter}) values (${accountId}, ${count})
    on conflict (account_id) do update set ${counter} = c.${counter} + ${count}
    returning ${counter} as last`.execute(tx);
  const last = rows[0]?.last;
  if (last === undefined) throw new Error('the id counter returned no row');
  return Number(last) - count + 1;
}
