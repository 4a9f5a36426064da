import type { Tx } from '../store/handles.js';
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

/** Removes an order that has ended (delivered or cancelled); undefined for an open one or none. */
export function deleteEndedOrder(
  tx: Tx,
  accountId: string,
  id: number,
): Promise<OrderRow | undefined> {
  return tx
    .deleteFrom('orders')
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .where('status', 'in', ['delivered', 'cancelled'])
    .returningAll()
    .executeTakeFirst();
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
