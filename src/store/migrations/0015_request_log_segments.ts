import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.js';

/**
 * The request log in segments (docs/decisions/0015-request-log-segments.md): a batch writes
 * one row per account, holding that account's entries of the batch, instead of a row per
 * request with three indexes, which cost each logged request more than answering it.
 *
 * - `request_log_segments`: numbered in the order written (`seq`); each holds an account's
 *   entries of one batch, oldest first, as one JSON array of positional arrays (`entries`,
 *   the last column, so that reading the others never reads it), with their number, how many
 *   are errors, and the times of the first and the last. Read newest first by account
 *   (`(account_id, seq)`), the only index. On PostgreSQL the entries are stored out of line
 *   uncompressed (`storage external`): compressing every batch cost more than its bytes.
 * - `request_log`, whose rows it replaces, is dropped with what it held: the log is not a
 *   record, and it was never released.
 *
 * Named 0015, after 0014.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = dialect === 'postgres' ? 'timestamptz' : 'text';
  await db.schema.dropTable('request_log').execute();
  await db.schema
    .createTable('request_log_segments')
    .addColumn('seq', dialect === 'postgres' ? 'bigint' : 'integer', (c) =>
      dialect === 'postgres' ? c.primaryKey().generatedAlwaysAsIdentity() : c.primaryKey(),
    )
    .addColumn('account_id', 'text', (c) => c.notNull())
    // How many entries, and how many of them answered 4xx or 5xx.
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('errors', 'integer', (c) => c.notNull())
    // When its oldest and its newest request arrived.
    .addColumn('first_at', sql.raw(ts), (c) => c.notNull())
    .addColumn('last_at', sql.raw(ts), (c) => c.notNull())
    .addColumn('entries', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('request_log_segments_account')
    .on('request_log_segments')
    .columns(['account_id', 'seq'])
    .execute();
  if (dialect === 'postgres') {
    await sql`alter table request_log_segments alter column entries set storage external`.execute(
      db,
    );
  }
}
