import type { Updateable } from 'kysely';
import type { ReadDb, Tx } from '../store/handles.js';
import { type Numbered, numberedInsert, numberedPage, type Unnumbered } from '../store/numbered.js';
import { preparedQuery } from '../store/prepared.js';
import type { PetRow, PetStatus, PetsTable } from '../store/tables.js';

const insertPetQuery = numberedInsert('pets', [
  'name',
  'category_id',
  'status',
  'created_at',
  'updated_at',
]);

/**
 * A new pet, numbered next in its account, as stored (the create path is hot, so prepared
 * statements). Its write says `numbersFor` the account.
 */
export async function insertPet(tx: Tx, row: Unnumbered<'pets'>): Promise<PetRow> {
  const { pet, stored } = await sendPetInsert(tx, row);
  await stored;
  return pet;
}

/**
 * As `insertPet`, but answers once the pet's number is known, its insert maybe still on its
 * way (PostgreSQL): what goes with the pet is sent behind it, then both awaited with
 * `insertedWith`. `stored` must be awaited.
 */
export async function sendPetInsert(
  tx: Tx,
  row: Unnumbered<'pets'>,
): Promise<{ pet: PetRow; stored: Numbered['stored'] }> {
  const { id, stored } = await insertPetQuery(tx, row);
  return { pet: { ...row, id } as PetRow, stored };
}

const petsPage = preparedQuery((db, p: { accountId: string; afterId: number; take: number }) =>
  db
    .selectFrom('pets')
    .selectAll()
    .where('account_id', '=', p.accountId)
    .where('id', '>', p.afterId)
    .orderBy('id')
    .limit(p.take),
);
const petsPageByStatus = preparedQuery(
  (db, p: { accountId: string; status: PetStatus; afterId: number; take: number }) =>
    db
      .selectFrom('pets')
      .selectAll()
      .where('account_id', '=', p.accountId)
      .where('status', '=', p.status)
      .where('id', '>', p.afterId)
      .orderBy('id')
      .limit(p.take),
);

/**
 * A keyset page of an account's pets (the list's hot path, so prepared queries), of those with
 * `status` and among `ids` when given.
 */
export function listPets(
  db: ReadDb,
  accountId: string,
  filter: {
    status?: PetStatus | undefined;
    ids?: readonly number[] | undefined;
    afterId: number;
    take: number;
  },
): Promise<PetRow[]> {
  const { status, ids, afterId, take } = filter;
  // Up to 100 ids (the schema's bound): a query of its own, not prepared.
  if (ids !== undefined) return numberedPage(db, 'pets', accountId, filter);
  return status === undefined
    ? petsPage(db, { accountId, afterId, take })
    : petsPageByStatus(db, { accountId, status, afterId, take });
}

/**
 * Compare-and-set: updates only while the pet still has `expectedStatus`, so two concurrent
 * changes cannot both pass the transition check. Returns undefined when nothing matched.
 */
export function updatePetIfStatus(
  tx: Tx,
  accountId: string,
  id: number,
  expectedStatus: PetStatus,
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

/**
 * Deletes the pet unless it has an open order (one statement, so no order slips between);
 * the pet as it was, or undefined when nothing was deleted.
 */
export function deletePetWithoutOpenOrder(
  tx: Tx,
  accountId: string,
  id: number,
): Promise<PetRow | undefined> {
  return tx
    .deleteFrom('pets')
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .where(({ not, exists }) => not(exists(openOrders(tx, accountId, id))))
    .returningAll()
    .executeTakeFirst();
}

/** Pets of the account per status, counted by the database. */
export async function countPetsByStatus(
  db: ReadDb,
  accountId: string,
): Promise<Array<{ status: PetStatus; n: number }>> {
  const rows = await db
    .selectFrom('pets')
    .select((eb) => ['status', eb.fn.countAll<number>().as('n')])
    .where('account_id', '=', accountId)
    .groupBy('status')
    .execute();
  return rows.map((r) => ({ status: r.status, n: Number(r.n) }));
}

/**
 * Whether the pet is on an order still open (placed or approved): its status is the order's to
 * move (src/orders/). A read of the orders' table, here with the pet's rule that asks it, so the
 * catalogue needs nothing of the orders' code.
 */
export async function hasOpenOrder(db: ReadDb, accountId: string, petId: number): Promise<boolean> {
  return (await openOrders(db, accountId, petId).executeTakeFirst()) !== undefined;
}

/** The pet's orders still open (placed or approved). */
function openOrders(db: ReadDb, accountId: string, petId: number) {
  return db
    .selectFrom('orders')
    .select('orders.id')
    .where('orders.account_id', '=', accountId)
    .where('orders.pet_id', '=', petId)
    .where('orders.status', 'in', ['placed', 'approved']);
}
