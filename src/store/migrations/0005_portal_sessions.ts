import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.js';

/**
 * Developer-portal sessions. The cookie holds a random token; only its SHA-256 is stored, so a
 * copy of the database opens no session.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = dialect === 'postgres' ? 'timestamptz' : 'text';
  await db.schema
    .createTable('portal_sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('created_at', sql.raw(ts), (c) => c.notNull())
    .addColumn('expires_at', sql.raw(ts), (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('portal_sessions_expires_at')
    .on('portal_sessions')
    .column('expires_at')
    .execute();
}
