import type { ReadDb, Tx } from '../store/handles.js';
import { numberedInsert } from '../store/numbered.js';
import type { OrderRow, OrderStatus } from '../store/tables.js';

const insertOrderQuery = numberedInsert('orders', ['pet_id', 'status', 'created_at', 'updated_at']);

/** A new order, numbered next in its account. Its write says `numbersFor` the account. */
export async function insertOrder(
  tx: Tx,
  accountId: string,
  petId: number,
  at: string,
): Promise<OrderRow> {
  const row = {
    account_id: accountId,
    pet_id: petId,
    status: 'placed' as const,
    created_at: at,
    updated_at: at,
  };
  const { id, stored } = await insertOrderQuery(tx, row);
  await stored;
  return { ...row, id };
}

export function findOrder(
  db: ReadDb,
  accountId: string,
  id: number,
): Promise<OrderRow | undefined> {
  return db
    .selectFrom('orders')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export function listOrders(
  db: ReadDb,
  accountId: string,
  filter: { status?: OrderStatus | undefined; afterId: number; take: number },
): Promise<OrderRow[]> {
  return db
    .selectFrom('orders')
    .selectAll()
    .where('account_id', '=', accountId)
    .$if(filter.status !== undefined, (q) => q.where('status', '=', filter.status as OrderStatus))
    .where('id', '>', filter.afterId)
    .orderBy('id')
    .limit(filter.take)
    .execute();
}

/** Compare-and-set on the order's status, like pets. */
export function updateOrderIfStatus(
  tx: Tx,
  accountId: string,
  id: number,
  expected: OrderStatus,
  status: OrderStatus,
  at: string,
): Promise<OrderRow | undefined> {
  return tx
    .updateTable('orders')
    .set({ status, updated_at: at })
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .where('status', '=', expected)
    .returningAll()
    .executeTakeFirst();
}
