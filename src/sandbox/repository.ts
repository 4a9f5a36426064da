import type { Tx } from '../store/handles.js';

/** What a reset removed, by kind. */
export interface Removed {
  pets: number;
  categories: number;
  orders: number;
  messages: number;
  events: number;
  deliveries: number;
}

/**
 * Deletes the account's catalogue, orders, messages, events and webhook deliveries: its test
 * data. Keys, webhook endpoints, the account, its request log and id counters stay. In the
 * order the rows refer to each other: deliveries before their events, orders before their pets,
 * pets before their categories. Each through an index that leads with the account (deliveries
 * through its endpoints' keys), so a reset reads no other account's rows.
 */
export async function removeTestData(tx: Tx, accountId: string): Promise<Removed> {
  const remove = async (table: 'events' | 'orders' | 'messages' | 'pets' | 'categories') =>
    Number(
      (await tx.deleteFrom(table).where('account_id', '=', accountId).executeTakeFirst())
        .numDeletedRows,
    );
  const deliveries = Number(
    (
      await tx
        .deleteFrom('webhook_deliveries')
        .where('endpoint_id', 'in', (eb) =>
          eb.selectFrom('webhook_endpoints').select('id').where('account_id', '=', accountId),
        )
        .executeTakeFirst()
    ).numDeletedRows,
  );
  const events = await remove('events');
  const orders = await remove('orders');
  const messages = await remove('messages');
  const pets = await remove('pets');
  const categories = await remove('categories');
  return { pets, categories, orders, messages, events, deliveries };
}
