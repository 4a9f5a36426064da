import type { Db } from './database.js';
import type { CategoryRow } from './tables.js';

export async function insertCategory(
  db: Db,
  accountId: string,
  name: string,
  at: string,
): Promise<CategoryRow> {
  return db
    .insertInto('categories')
    .values({ account_id: accountId, name, created_at: at })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function findCategory(
  db: Db,
  accountId: string,
  id: number,
): Promise<CategoryRow | undefined> {
  return db
    .selectFrom('categories')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export function listCategories(
  db: Db,
  accountId: string,
  afterId: number,
  take: number,
): Promise<CategoryRow[]> {
  return db
    .selectFrom('categories')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '>', afterId)
    .orderBy('id')
    .limit(take)
    .execute();
}

export function renameCategory(
  db: Db,
  accountId: string,
  id: number,
  name: string,
): Promise<CategoryRow | undefined> {
  return db
    .updateTable('categories')
    .set({ name })
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function deleteCategory(db: Db, accountId: string, id: number): Promise<boolean> {
  const result = await db
    .deleteFrom('categories')
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}
