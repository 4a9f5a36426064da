import type { Kysely } from 'kysely';
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

/** The store's own casts: a handle lent as what it is (a writer's as `Tx`, the reader's as
 * `ReadDb`). Free at run time. */
export function lendTx(db: Db): Tx {
  return db as unknown as Tx;
}

export function lendReader(db: Db): ReadDb {
  return db as unknown as ReadDb;
}
