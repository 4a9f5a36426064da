import type { Updateable } from 'kysely';
import type { Db } from './database.js';
import type { NewPetRow, PetRow, PetsTable } from './tables.js';

export function insertPet(db: Db, row: NewPetRow): Promise<PetRow> {
  return db.insertInto('pets').values(row).returningAll().executeTakeFirstOrThrow();
}

export function findPet(db: Db, accountId: string, id: number): Promise<PetRow | undefined> {
  return db
    .selectFrom('pets')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export function listPets(
  db: Db,
  accountId: string,
  filter: { status?: string | undefined; afterId: number; take: number },
): Promise<PetRow[]> {
  return db
    .selectFrom('pets')
    .selectAll()
    .where('account_id', '=', accountId)
    .$if(filter.status !== undefined, (q) => q.where('status', '=', filter.status as string))
    .where('id', '>', filter.afterId)
    .orderBy('id')
    .limit(filter.take)
    .execute();
}

/**
 * Compare-and-set: updates only while the pet still has `expectedStatus`, so two concurrent
 * changes cannot both pass the transition check. Returns undefined when nothing matched.
 */
export function updatePetIfStatus(
  db: Db,
  accountId: string,
  id: number,
  expectedStatus: string,
  changes: Updateable<PetsTable>,
): Promise<PetRow | undefined> {
  return db
    .updateTable('pets')
    .set(changes)
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .where('status', '=', expectedStatus)
    .returningAll()
    .executeTakeFirst();
}

export async function deletePet(db: Db, accountId: string, id: number): Promise<boolean> {
  const result = await db
    .deleteFrom('pets')
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}
