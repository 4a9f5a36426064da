import type { Updateable } from 'kysely';
import type { ReadDb, Tx } from './handles.js';
import { preparedInsert, preparedQuery } from './prepared.js';
import type { NewPetRow, PetRow, PetsTable } from './tables.js';

// Parameters: [account_id, name, category_id, status, created_at, updated_at].
const insertPetQuery = preparedInsert((db) =>
  db.insertInto('pets').values({
    account_id: '',
    name: '',
    category_id: 0,
    status: '',
    created_at: '',
    updated_at: '',
  }),
);

/** A new pet, returned as stored (the create path is hot, so a prepared insert). */
export async function insertPet(tx: Tx, row: NewPetRow): Promise<PetRow> {
  const id = await insertPetQuery(tx, [
    row.account_id,
    row.name,
    row.category_id,
    row.status,
    row.created_at,
    row.updated_at,
  ]);
  return { ...row, id };
}

export function findPet(db: ReadDb, accountId: string, id: number): Promise<PetRow | undefined> {
  return db
    .selectFrom('pets')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
}

// Parameters: [accountId, afterId, take].
const petsPage = preparedQuery((db) =>
  db
    .selectFrom('pets')
    .selectAll()
    .where('account_id', '=', '')
    .where('id', '>', 0)
    .orderBy('id')
    .limit(0),
);
// Parameters: [accountId, status, afterId, take].
const petsPageByStatus = preparedQuery((db) =>
  db
    .selectFrom('pets')
    .selectAll()
    .where('account_id', '=', '')
    .where('status', '=', '')
    .where('id', '>', 0)
    .orderBy('id')
    .limit(0),
);

/** A keyset page of an account's pets (the list's hot path, so a prepared query). */
export function listPets(
  db: ReadDb,
  accountId: string,
  filter: { status?: string | undefined; afterId: number; take: number },
): Promise<PetRow[]> {
  return filter.status === undefined
    ? petsPage(db, [accountId, filter.afterId, filter.take])
    : petsPageByStatus(db, [accountId, filter.status, filter.afterId, filter.take]);
}

/**
 * Compare-and-set: updates only while the pet still has `expectedStatus`, so two concurrent
 * changes cannot both pass the transition check. Returns undefined when nothing matched.
 */
export function updatePetIfStatus(
  tx: Tx,
  accountId: string,
  id: number,
  expectedStatus: string,
  changes: Updateable<PetsTable>,
): Promise<PetRow | undefined> {
  return tx
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
  tx: Tx,
  accountId: string,
  id: number,
): Promise<boolean> {
  const result = await tx
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
  db: ReadDb,
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
