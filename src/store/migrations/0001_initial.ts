import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.js';

/**
 * Accounts, API keys, categories and pets. Every tenant-owned row carries `account_id`, and
 * a pet's category must belong to the same account (composite foreign key).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = dialect === 'postgres' ? 'timestamptz' : 'text';

  await db.schema
    .createTable('accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('plan', 'text', (c) => c.notNull())
    .addColumn('per_minute', 'integer')
    .addColumn('per_day', 'integer')
    .addColumn('created_at', sql.raw(ts), (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('name', 'text')
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', sql.raw(ts), (c) => c.notNull())
    .addColumn('last_used_at', sql.raw(ts))
    .addColumn('revoked_at', sql.raw(ts))
    .execute();
  await db.schema.createIndex('api_keys_account').on('api_keys').columns(['account_id']).execute();

  await db.schema
    .createTable('categories')
    .$call((t) =>
      dialect === 'postgres'
        ? t.addColumn('id', 'bigint', (c) => c.primaryKey().generatedByDefaultAsIdentity())
        : t.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement()),
    )
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', sql.raw(ts), (c) => c.notNull())
    .addUniqueConstraint('categories_account_id_id', ['account_id', 'id'])
    .execute();

  await db.schema
    .createTable('pets')
    .$call((t) =>
      dialect === 'postgres'
        ? t.addColumn('id', 'bigint', (c) => c.primaryKey().generatedByDefaultAsIdentity())
        : t.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement()),
    )
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('category_id', 'bigint', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', sql.raw(ts), (c) => c.notNull())
    .addColumn('updated_at', sql.raw(ts), (c) => c.notNull())
    .addForeignKeyConstraint('pets_category', ['account_id', 'category_id'], 'categories', [
      'account_id',
      'id',
    ])
    .execute();
  // Keyset pages: by id within an account, and by id within an account and status.
  await db.schema.createIndex('pets_account_id').on('pets').columns(['account_id', 'id']).execute();
  await db.schema
    .createIndex('pets_account_status_id')
    .on('pets')
    .columns(['account_id', 'status', 'id'])
    .execute();
  await db.schema
    .createIndex('pets_account_category')
    .on('pets')
    .columns(['account_id', 'category_id'])
    .execute();
}
