import type { CompiledQuery, Generated, InsertQueryBuilder, InsertResult } from 'kysely';
import type { Db, ReadDb, Tx } from './handles.js';
import type { Tables } from './tables.js';

/**
 * A hot query built and compiled by Kysely once per database, then run with fresh
 * parameters: building a query costs more than running it from a prepared statement. The
 * builder must use its parameters in the order the caller passes them (the compiled SQL holds
 * one placeholder per value, in order), which each use states next to its builder.
 */
export function preparedQuery<Row>(build: (db: ReadDb) => { compile(): CompiledQuery<Row> }) {
  return prepared(build);
}

/** As `preparedQuery`, for a statement that changes data (and may return rows): run in a write. */
export function preparedWrite<Row>(build: (tx: Tx) => { compile(): CompiledQuery<Row> }) {
  return prepared(build);
}

function prepared<H extends ReadDb, Row>(build: (db: H) => { compile(): CompiledQuery<Row> }) {
  const compiled = compiledOnce(build);
  return async (db: H, parameters: readonly unknown[]): Promise<Row[]> => {
    const query = checked(compiled(db), parameters);
    const direct = directRunners.get(db);
    if (direct) return direct.all(query.sql, parameters) as Row[];
    return (await db.executeQuery<Row>({ ...query, parameters })).rows;
  };
}

/** Tables whose id the database assigns, a number (the row id, on SQLite). */
type NumberedTable = {
  [T in keyof Tables]: Tables[T] extends { id: Generated<number> } ? T : never;
}[keyof Tables];

/**
 * A hot insert of one row, answering the id the database gave it. Where the query runs
 * directly on SQLite, that is the connection's last row id: `RETURNING` costs SQLite ~3 µs a
 * row (it gathers the rows in a table of its own first). Elsewhere, `returning id`.
 */
export function preparedInsert<T extends NumberedTable>(
  build: (tx: Tx) => InsertQueryBuilder<Tables, T, InsertResult>,
) {
  const plain = compiledOnce(build);
  const returning = compiledOnce((tx: Tx) => build(tx).returning('id'));
  return async (db: Tx, parameters: readonly unknown[]): Promise<number> => {
    const direct = directRunners.get(db);
    if (direct) return direct.insert(checked(plain(db), parameters).sql, parameters);
    const query = checked(returning(db), parameters);
    const [row] = (await db.executeQuery<{ id: number }>({ ...query, parameters })).rows;
    if (!row) throw new Error('insert returned no row');
    return row.id;
  };
}

/**
 * Compiled once per database: by its adapter, which a connection's handle shares with the
 * handle it came from (group commit takes a new connection handle for every batch). We use no
 * Kysely plugins, which could make two handles of one adapter write different SQL.
 */
function compiledOnce<H extends ReadDb, Row>(build: (db: H) => { compile(): CompiledQuery<Row> }) {
  const compiled = new WeakMap<object, CompiledQuery<Row>>();
  return (db: H): CompiledQuery<Row> => {
    const adapter = db.getExecutor().adapter;
    let query = compiled.get(adapter);
    if (!query) {
      query = build(db).compile();
      compiled.set(adapter, query);
    }
    return query;
  };
}

function checked<Q extends CompiledQuery<unknown>>(query: Q, parameters: readonly unknown[]): Q {
  if (query.parameters.length !== parameters.length) {
    throw new Error(`prepared query takes ${query.parameters.length} parameters`);
  }
  return query;
}

/** Runs SQL text on a connection at once, with no query builder between. */
export interface DirectRunner {
  /** The rows of a statement that returns rows; none for one that does not. */
  all(sql: string, parameters: readonly unknown[]): unknown[];
  /** Runs an insert of one row; the row id it gave it. */
  insert(sql: string, parameters: readonly unknown[]): number;
}

/**
 * Connections a hot query may run on directly: the SQLite connection that group commit holds
 * for a batch (better-sqlite3 answers synchronously, and the batch has the connection to
 * itself). Kysely's own path costs ~2 µs a statement there: a connection provider, promises.
 */
const directRunners = new WeakMap<object, DirectRunner>();

/** Lets hot queries run directly on `connection` (see above). */
export function runDirectly(connection: Db, runner: DirectRunner): void {
  directRunners.set(connection, runner);
}
