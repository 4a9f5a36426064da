import { type Insertable, type Selectable, sql } from 'kysely';
import { isPostgres, lentWith, type NumberedTable, type ReadDb, type Tx } from './handles.js';
import { preparedWrite } from './prepared.js';
import type { Tables } from './tables.js';

export type { NumberedTable };

/**
 * Tables whose rows are numbered per account: an account's categories, pets and orders are 1,
 * 2, 3… in the order they are committed, whatever other accounts do, so an id tells nothing
 * about anyone else's volume. `id_counters` holds each account's last number per table; a
 * number is never given twice, even after its row is deleted (an order keeps its pet's id).
 * Numbers follow commit order on both stores, which the page cache relies on
 * (docs/decisions/0020-numbers-in-commit-order.md).
 */

/** A numbered row as stored. */
export type NumberedRow<T extends NumberedTable> = Selectable<Tables[T]>;

/** A numbered row as inserted: every column, the id aside. */
export type Unnumbered<T extends NumberedTable> = Omit<Insertable<Tables[T]>, 'id'> & {
  account_id: string;
};

/**
 * An insert of one row of `table`, numbered next in its account; answers its `Numbered`.
 * `columns` are the row's columns but `account_id` and `id`, in the order they are written.
 */
export function numberedInsert<T extends NumberedTable>(
  table: T,
  columns: ReadonlyArray<Exclude<keyof Unnumbered<T>, 'account_id'> & string>,
) {
  type Row = Unnumbered<T> & Record<string, unknown>;
  const counter = sql.ref(table);
  const names = sql.join(['account_id', 'id', ...columns].map((c) => sql.ref(c)));
  const values = (p: Row) => sql.join(columns.map((c) => sql`${p[c]}`));

  // PostgreSQL: the number comes from the counters the batch holds (takeNumbers); the insert
  // is one statement, so it runs beside the batch's others.
  const numbered = preparedWrite((tx: Tx, p: Row & { id: number }) => ({
    compile: () =>
      sql`insert into ${sql.table(table)} (${names}) values (${p.account_id}, ${p.id}, ${values(p)})`.compile(
        tx,
      ),
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

  return async (tx: Tx, row: Unnumbered<T>): Promise<Numbered> => {
    if (isPostgres(tx)) {
      const id = takeNumbers(tx, row.account_id, table);
      const stored = numbered(tx, { ...(row as Row), id }).then(() => {});
      // Awaited by the caller; marked heard here, so a caller's throw before it cannot leave
      // its failure unheard (which would end the process).
      stored.catch(() => {});
      return { id, stored };
    }
    await insert(tx, row as Row);
    const [moved] = await moveOn(tx, { account_id: row.account_id });
    if (!moved) throw new Error('the id counter returned no row');
    return { id: moved.id, stored: Promise.resolve() };
  };
}

/**
 * A numbered row's number and its insert. On PostgreSQL the number is known at once and the
 * insert is on its way, unanswered: what goes with the row (its event) is sent right behind it,
 * then both awaited (`insertedWith`). On SQLite the insert is done when the number is known.
 */
export interface Numbered {
  id: number;
  stored: Promise<void>;
}

/**
 * Waits for a numbered insert and what was sent behind it; should the insert fail, its error
 * is the one thrown (what followed it fails too, for the transaction is aborted).
 */
export async function insertedWith(stored: Promise<void>, behind: Promise<unknown>): Promise<void> {
  const [insert, besides] = await Promise.allSettled([stored, behind]);
  if (insert.status === 'rejected') throw insert.reason;
  if (besides.status === 'rejected') throw besides.reason;
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
  if (isPostgres(tx)) {
    return takeNumbers(tx, accountId, table, count);
  }
  const counter = sql.ref(table);
  const { rows } = await sql<{ last: number }>`
    insert into id_counters as c (account_id, ${counter}) values (${accountId}, ${count})
    on conflict (account_id) do update set ${counter} = c.${counter} + ${count}
    returning ${counter} as last`.execute(tx);
  const last = rows[0]?.last;
  if (last === undefined) throw new Error('the id counter returned no row');
  return Number(last) - count + 1;
}

/**
 * The first of `count` numbers of an account's `table` for a write on PostgreSQL, from the
 * counters its batch holds. Throws unless the write said whose rows it numbers
 * (WriteOptions.numbersFor), so its batch took that account's counter first, in order:
 * otherwise two instances' batches could each hold a counter the other waits for.
 */
export function takeNumbers(tx: Tx, accountId: string, table: NumberedTable, count = 1): number {
  const batch = lentWith(tx)?.numbers;
  if (!batch) throw new Error('a numbered insert on PostgreSQL runs in a group-commit write');
  return batch.take(accountId, table, count);
}

/** An account's row of `table`, by its number. */
export function findNumbered<T extends NumberedTable>(
  db: ReadDb,
  table: T,
  accountId: string,
  id: number,
): Promise<NumberedRow<T> | undefined> {
  return db
    .selectFrom(table as NumberedTable)
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst() as Promise<NumberedRow<T> | undefined>;
}

/**
 * A keyset page of an account's rows of `table`, in number order: at most `take`, numbered
 * after `afterId`; only those of `status` and among `ids` when either is given.
 */
export function numberedPage<T extends NumberedTable>(
  db: ReadDb,
  table: T,
  accountId: string,
  page: {
    status?: (Tables[T] extends { status: infer S } ? S : never) | undefined;
    ids?: readonly number[] | undefined;
    afterId: number;
    take: number;
  },
): Promise<NumberedRow<T>[]> {
  const { status, ids } = page;
  // Typed as a table with a status: only pets and orders are ever given one (`page.status`).
  return db
    .selectFrom(table as Exclude<NumberedTable, 'categories'>)
    .selectAll()
    .where('account_id', '=', accountId)
    .$if(ids !== undefined, (q) => q.where('id', 'in', ids?.length ? [...ids] : [0]))
    .$if(status !== undefined, (q) =>
      q.where('status', '=', status as NumberedRow<'pets' | 'orders'>['status']),
    )
    .where('id', '>', page.afterId)
    .orderBy('id')
    .limit(page.take)
    .execute() as Promise<NumberedRow<T>[]>;
}
