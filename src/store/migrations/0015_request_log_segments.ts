import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.js';

/**
 * The request log in segments, a row per account per batch, in place of `request_log`, dropped
 * with what it held (docs/decisions/0015-request-log-segments.md). `entries` is the last
 * column, so that reading the others never reads it. Named 0015, after 0014.
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
