import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.js';

/**
 * Store orders. An order keeps its pet id after the pet is gone (history), so there is no
 * foreign key to pets; at most one open order (placed or approved) per pet, by partial index.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = dialect === 'postgres' ? 'timestamptz' : 'text';
  await db.schema
    .createTable('orders')
    .$call((t) =>
      dialect === 'postgres'
        ? t.addColumn('id', 'bigint', (c) => c.primaryKey().generatedByDefaultAsIdentity())
        : t.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement()),
    )
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('pet_id', 'bigint', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', sql.raw(ts), (c) => c.notNull())
    .addColumn('updated_at', sql.raw(ts), (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('orders_account_id')
    .on('orders')
    .columns(['account_id', 'id'])
    .execute();
  await db.schema
    .createIndex('orders_account_status_id')
    .on('orders')
    .columns(['account_id', 'status', 'id'])
    .execute();
  await db.schema
    .createIndex('orders_open_pet')
    .on('orders')
    .column('pet_id')
    .unique()
    .where(sql.ref('status'), 'in', ['placed', 'approved'])
    .execute();
}
