import { type Kysely, PostgresAdapter } from 'kysely';
import type { IdClock } from './id-clock.js';
import type { Tables } from './tables.js';

/**
 * A Kysely handle over our tables as the store holds it. Only src/store/database.ts and
 * src/store/group-commit.ts have one; everything else gets a `ReadDb` or a `Tx`.
 */
export type Db = Kysely<Tables>;

/**
 * What no lent handle offers: starting a transaction or taking a connection (inside a group
 * commit batch, SQLite's one connection is already taken: either would wait for the batch, which
 * waits for the work) and closing the database.
 */
type Withheld =
  | 'transaction'
  | 'startTransaction'
  | 'connection'
  | 'destroy'
  | typeof Symbol.asyncDispose;

/** The statements that change data, which a `ReadDb` does not offer. */
type Changes = 'insertInto' | 'replaceInto' | 'updateTable' | 'deleteFrom' | 'mergeInto' | 'schema';

// Brands that exist only in types: the handles are the Kysely objects themselves at run time
// (no wrapper, nothing allocated per query), but no other type is assignable to them.
declare const reads: unique symbol;
declare const writes: unique symbol;

/**
 * A handle for reads: `Database.reader`, or a write's `Tx` (which sees the write's own
 * uncommitted changes). Repository functions that only read take one.
 */
export type ReadDb = Omit<Db, Withheld | Changes> & { readonly [reads]: true };

/**
 * The handle `Database.write` gives its work, and the only one writing repository functions
 * take. Nothing outside the store has another writing handle, so work cannot write or read past
 * its batch (on SQLite that waited for the batch that waits for the work: a deadlock), and the
 * reader, a `ReadDb`, does not type-check where a `Tx` is required.
 */
export type Tx = Omit<Db, Withheld> & { readonly [reads]: true; readonly [writes]: true };

/**
 * What a write's handle carries of the database and the batch that lent it: a property of the
 * handle, set as it is lent, so that what runs on it finds its own database's parts, and no
 * registry keyed by handles is kept anywhere (docs/decisions/0009-state-owned-by-instances.md).
 */
export interface Lent {
  /** The database's id clock: the order of the ids its writes make (src/webhooks/events.ts). */
  readonly ids: IdClock;
  /** SQLite: runs hot queries at once on the connection the batch holds (src/store/prepared.ts). */
  readonly direct?: DirectRunner;
  /**
   * PostgreSQL: the SQL of hot writes by text, and the name each is prepared under on the
   * batch's connection (src/store/prepared.ts, src/store/pg-group-commit.ts).
   */
  readonly serverStatements?: Map<string, string>;
  /** PostgreSQL: numbers from the id counters the batch holds (src/store/numbered.ts). */
  readonly numbers?: NumberSource;
}

export interface NumberSource {
  /** The first of `count` numbers of the account's `table`. */
  take(accountId: string, table: NumberedTable, count: number): number;
}

/** Where a lent handle keeps its `Lent`: a symbol no other module has. */
const LENT = Symbol('lent');

/** The store's own casts: a handle lent as what it is (a writer's as `Tx`, carrying `lent`;
 * the reader's as `ReadDb`). Free at run time but for that one property. */
export function lendTx(db: Db, lent: Lent): Tx {
  (db as { [LENT]?: Lent })[LENT] = lent;
  return db as unknown as Tx;
}

/** What a handle was lent with: nothing for the reader. */
export function lentWith(handle: ReadDb): Lent | undefined {
  return (handle as { [LENT]?: Lent })[LENT];
}

/** The id clock of the database whose write `tx` is. */
export function idClockOf(tx: Tx): IdClock {
  const lent = lentWith(tx);
  if (!lent) throw new Error('not a handle lent by a database write');
  return lent.ids;
}

export function lendReader(db: Db): ReadDb {
  return db as unknown as ReadDb;
}

/** Whether the handle is a PostgreSQL database's (else SQLite's): where their SQL differs. */
export function isPostgres(db: ReadDb): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/** The tables whose rows are numbered per account (src/store/numbered.ts). */
export type NumberedTable = 'categories' | 'pets' | 'orders';

/**
 * Runs SQL text on a connection at once, with no query builder between: the SQLite connection
 * that group commit holds for a batch lends its `Tx` with one (`Lent.direct`): better-sqlite3
 * answers synchronously, and the batch has the connection to itself. Kysely's own path costs
 * ~2 µs a statement there: a connection provider, promises.
 */
export interface DirectRunner {
  /** The rows of a statement that returns rows; none for one that does not. */
  all(sql: string, parameters: readonly unknown[]): unknown[];
}
