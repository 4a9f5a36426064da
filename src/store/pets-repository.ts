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

/** Deletes the pet unless it has an open order (one statement, so no order slips between). */
export async function deletePetWithoutOpenOrder(
  db: Db,
  accountId: string,
  id: number,
): Promise<boolean> {
  const result = await db
    .deleteFrom('pets')
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('orders')
            .select('orders.id')
            .where('orders.pet_id', '=', id)
            .where('orders.status', 'in', ['placed', 'approved']),
        ),
      ),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/** Pets of the account per status, counted by the database. */
export async function countPetsByStatus(
  db: Db,
  accountId: string,
): Promise<Array<{ status: string; n: number }>> {
  const rows = await db
    .selectFrom('pets')
    .select((eb) => ['status', eb.fn.countAll<number>().as('n')])
    .where('account_id', '=', accountId)
    .groupBy('status')
    .execute();
  return rows.map((r) => ({ status: r.status, n: Number(r.n) }));
}
