import type { Clock } from '../clock.js';
import { type Page, type PageRequest, readIdPage } from '../domain/pagination.js';
import { fail, ok, type Result } from '../domain/result.js';
import { type Change, change, type Write } from '../store/change.js';
import type { ReadDb, Tx } from '../store/database.js';
import { findNumbered, numberedPage } from '../store/numbered.js';
import { isForeignKeyViolation } from '../store/store-errors.js';
import type { CategoryRow } from '../store/tables.js';
import { deleteCategory, insertCategory, renameCategory } from './categories-repository.js';

export interface Category {
  id: number;
  name: string;
}

function toCategory(row: CategoryRow): Category {
  return { id: row.id, name: row.name };
}

const notFound = (id: number) =>
  fail(
    'not_found',
    `No category ${id} in this account; list its categories with \`GET /v1/categories\`.`,
  );

/** Adds a category, as a change: one blind insert, numbered in the account. */
export function addCategory(clock: Clock, accountId: string, name: string): Write<Category> {
  return {
    options: { blind: true, numbersFor: accountId },
    work: (tx) => createCategory(tx, clock, accountId, name),
  };
}

/** Adds a category in a write of the caller's, which says `numbersFor` the account. */
export async function createCategory(
  tx: Tx,
  clock: Clock,
  accountId: string,
  name: string,
): Promise<Category> {
  return toCategory(await insertCategory(tx, accountId, name, clock.now().toISOString()));
}

export async function getCategory(
  db: ReadDb,
  accountId: string,
  id: number,
): Promise<Result<Category, 'not_found'>> {
  const row = await findNumbered(db, 'categories', accountId, id);
  return row ? ok(toCategory(row)) : notFound(id);
}

export function listCategoryPage(
  db: ReadDb,
  accountId: string,
  page: PageRequest,
): Promise<Result<Page<Category>, 'invalid_cursor'>> {
  const read = (afterId: number, take: number) =>
    numberedPage(db, 'categories', accountId, { afterId, take });
  return readIdPage(page, read, toCategory);
}

export function updateCategory(
  accountId: string,
  id: number,
  changes: { name?: string | undefined },
): Change<Result<Category, 'not_found'>> {
  return change(async (tx) => {
    const row =
      changes.name === undefined
        ? await findNumbered(tx, 'categories', accountId, id)
        : await renameCategory(tx, accountId, id, changes.name);
    return row ? ok(toCategory(row)) : notFound(id);
  });
}

export function removeCategory(
  accountId: string,
  id: number,
): Change<Result<void, 'not_found' | 'category_in_use'>> {
  return change(async (tx) => {
    try {
      return (await deleteCategory(tx, accountId, id)) ? ok(undefined) : notFound(id);
    } catch (err) {
      // The pets' foreign key decides, so a pet added at the same instant is never orphaned.
      if (!isForeignKeyViolation(err)) throw err;
      return fail('category_in_use', `Category ${id} still has pets; move or delete them first.`);
    }
  });
}
