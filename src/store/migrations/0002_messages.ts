import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.js';

/**
 * Quickstart messages. The row is the source of truth for a message's status, whichever queue
 * carries it; `available_at` and `lease_until` let the table itself serve as the queue.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = dialect === 'postgres' ? 'timestamptz' : 'text';
  await db.schema
    .createTable('messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('available_at', sql.raw(ts), (c) => c.notNull())
    .addColumn('lease_token', 'text')
    .addColumn('lease_until', sql.raw(ts))
    .addColumn('failure_reason', 'text')
    .addColumn('created_at', sql.raw(ts), (c) => c.notNull())
    .addColumn('updated_at', sql.raw(ts), (c) => c.notNull())
    .execute();
  // The worker's claim: due queued messages, and processing ones whose lease ran out.
  await db.schema
    .createIndex('messages_status_available')
    .on('messages')
    .columns(['status', 'available_at'])
    .execute();
}
