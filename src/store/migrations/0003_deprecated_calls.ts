import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.js';

/** Calls of deprecated operations, per account and operation: who still depends on them. */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = dialect === 'postgres' ? 'timestamptz' : 'text';
  await db.schema
    .createTable('deprecated_calls')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('operation_id', 'text', (c) => c.notNull())
    .addColumn('calls', 'bigint', (c) => c.notNull())
    .addColumn('last_called_at', sql.raw(ts), (c) => c.notNull())
    .addPrimaryKeyConstraint('deprecated_calls_pk', ['account_id', 'operation_id'])
    .execute();
}
