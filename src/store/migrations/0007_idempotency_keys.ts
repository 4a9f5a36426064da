import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.js';

/**
 * The answers of POST requests sent with an `Idempotency-Key`, kept 24 hours
 * (src/http/idempotency.ts). Each is written in the transaction of the change it answers. The
 * key itself is not stored, only its SHA-256, and the answer is encrypted under a key derived
 * from it: a copy of the database reveals no answer (a new API key's secret among them).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = dialect === 'postgres' ? 'timestamptz' : 'text';
  await db.schema
    .createTable('idempotency_keys')
    // The account, or the client's address for sign-up.
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull())
    // SHA-256 of the method, path and body: the same key with another request is refused.
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('answer', 'text', (c) => c.notNull())
    .addColumn('created_at', sql.raw(ts), (c) => c.notNull())
    .addColumn('expires_at', sql.raw(ts), (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pkey', ['scope', 'key_hash'])
    .execute();
  await db.schema
    .createIndex('idempotency_keys_expires_at')
    .on('idempotency_keys')
    .column('expires_at')
    .execute();
}
