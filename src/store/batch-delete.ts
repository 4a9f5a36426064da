import { type SelectQueryBuilder, sql } from 'kysely';
import type { Tx } from './handles.js';
import type { Tables } from './tables.js';

/** The rows of `table` a batch delete may pick: a query over it, to add conditions to. */
export type Rows<T extends keyof Tables> = SelectQueryBuilder<Tables, T, object>;

/**
 * Deletes up to `limit` of the rows of `table` that `where` keeps; how many it deleted. A delete
 * takes no limit on PostgreSQL, so the rows are named by `key` (the table's primary key) in a
 * limited subquery: housekeeping deletes in batches that each hold a write briefly.
 */
export async function deleteBatch<T extends keyof Tables & string>(
  tx: Tx,
  table: T,
  key: readonly (keyof Tables[T] & string)[],
  where: (rows: Rows<T>) => Rows<T>,
  limit: number,
): Promise<number> {
  const picked = where(tx.selectFrom(table) as unknown as Rows<T>)
    .select(key as never)
    .limit(limit);
  const columns = sql.join(key.map((column) => sql.ref(column)));
  // `picked` compiles in parentheses of its own.
  const result = await sql`delete from ${sql.table(table)} where (${columns}) in ${picked}`.execute(
    tx,
  );
  return Number(result.numAffectedRows ?? 0);
}
