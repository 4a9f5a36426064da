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
    return (await db.executeQuery<Row>({ ...query, parameters })).rows;
  };
}
