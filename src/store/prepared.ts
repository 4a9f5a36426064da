import type { CompiledQuery } from 'kysely';
import type { Db } from './database.js';

/**
 * A hot query built and compiled by Kysely once per database handle, then run with fresh
 * parameters: building a query costs more than running it from a prepared statement. The
 * builder must use its parameters in the order the caller passes them (the compiled SQL holds
 * one placeholder per value, in order), which each use states next to its builder.
 */
export function preparedQuery<Row>(build: (db: Db) => { compile(): CompiledQuery<Row> }) {
  const compiled = new WeakMap<Db, CompiledQuery<Row>>();
  return async (db: Db, parameters: readonly unknown[]): Promise<Row[]> => {
    let query = compiled.get(db);
    if (!query) {
      query = build(db).compile();
      compiled.set(db, query);
    }
    if (query.parameters.length !== parameters.length) {
      throw new Error(`prepared query takes ${query.parameters.length} parameters`);
    }
    const direct = directRunners.get(db);
    if (direct) return direct(query.sql, parameters) as Row[];
    return (await db.executeQuery<Row>({ ...query, parameters })).rows;
  };
}

/** Runs SQL text on a connection at once, with no query builder between. */
export type DirectRunner = (sql: string, parameters: readonly unknown[]) => unknown[];

/**
 * Connections a hot query may run on directly: the SQLite connection that group commit holds
 * for a batch (better-sqlite3 answers synchronously, and the batch has the connection to
 * itself). Kysely's own path costs ~2 µs a statement there: a connection provider, promises.
 */
const directRunners = new WeakMap<Db, DirectRunner>();

/** Lets hot queries run directly on `connection` (see above). */
export function runDirectly(connection: Db, runner: DirectRunner): void {
  directRunners.set(connection, runner);
}
