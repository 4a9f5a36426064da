import type { ReadDb, Tx } from '../store/handles.js';
import { numberedInsert } from '../store/numbered.js';
import type { CategoryRow } from '../store/tables.js';

const insertCategoryQuery = numberedInsert('categories', ['name', 'created_at']);

/** A new category, numbered next in its account. Its write says `numbersFor` the account. */
export async function insertCategory(
  tx: Tx,
  accountId: string,
  name: string,
  at: string,
): Promise<CategoryRow> {
  const row = { account_id: accountId, name, created_at: at };
  const { id, stored } = await insertCategoryQuery(tx, row);
  await stored;
  return { ...row, id };
}

export function renameCategory(
  tx: Tx,
  accountId: string,
  id: number,
  name: string,
): Promise<CategoryRow | undefined> {
  return tx
    .updateTable('categories')
    .set({ name })
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function deleteCategory(tx: Tx, accountId: string, id: number): Promise<boolean> {
  const result = await tx
    .deleteFrom('categories')
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/** Which of these names the account's categories already have. */
export async function existingCategoryNames(
  db: ReadDb,
  accountId: string,
  names: string[],
): Promise<string[]> {
  const rows = await db
    .selectFrom('categories')
    .select('name')
    .where('account_id', '=', accountId)
    .where('name', 'in', names)
    .execute();
  return rows.map((row) => row.name);
}
