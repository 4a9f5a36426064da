import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.js';

/**
 * The request log: `request_log`, a row per request in the order written, and
 * `request_log_hours`, each account's requests per hour by status class, a row per writing
 * process (docs/decisions/0013-request-log.md). No foreign key: a batch writes hundreds of
 * rows at once, and the log is no record. Named 0013, after 0012.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = dialect === 'postgres' ? 'timestamptz' : 'text';
  const real = dialect === 'postgres' ? 'double precision' : 'real';
  await db.schema
    .createTable('request_log')
    .addColumn('seq', dialect === 'postgres' ? 'bigint' : 'integer', (c) =>
      dialect === 'postgres' ? c.primaryKey().generatedAlwaysAsIdentity() : c.primaryKey(),
    )
    .addColumn('account_id', 'text', (c) => c.notNull())
    // The request's X-Request-Id.
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('key_id', 'text')
    .addColumn('method', 'text', (c) => c.notNull())
    // The operation's path pattern (`/v1/pets/{petId}`); null when no operation matched.
    .addColumn('route', 'text')
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('duration_ms', sql.raw(real), (c) => c.notNull())
    .addColumn('error_code', 'text')
    .addColumn('idempotency_key', 'text')
    .addColumn('replayed', 'integer', (c) => c.notNull())
    // The client's address block: an IPv4 /24 or an IPv6 /64; null when it had gone.
    .addColumn('client', 'text')
    // 4xx and 5xx only: the request's JSON body, redacted, at most 4 KB; the Error answered.
    .addColumn('request_body', 'text')
    .addColumn('request_body_truncated', 'integer', (c) => c.notNull())
    .addColumn('error_body', 'text')
    .addColumn('created_at', sql.raw(ts), (c) => c.notNull())
    .execute();
  // Newest first per account (every filter below but the two indexed reads along it, and an
  // id is looked up along it, newest first); the 10,000th newest.
  await db.schema
    .createIndex('request_log_account')
    .on('request_log')
    .columns(['account_id', 'seq'])
    .execute();
  // The errors (`status=4xx`, `5xx`, `404`…): only they are in it.
  await db.schema
    .createIndex('request_log_errors')
    .on('request_log')
    .columns(['account_id', 'seq'])
    .where(sql.ref('status'), '>=', sql.lit(400))
    .execute();
  await db.schema
    .createIndex('request_log_key')
    .on('request_log')
    .columns(['account_id', 'key_id', 'seq'])
    .execute();

  await db.schema
    .createTable('request_log_hours')
    .addColumn('account_id', 'text', (c) => c.notNull())
    // The hour's first instant (UTC).
    .addColumn('hour', sql.raw(ts), (c) => c.notNull())
    .addColumn('writer', 'text', (c) => c.notNull())
    .addColumn('s2xx', 'integer', (c) => c.notNull())
    // 4xx but 429, which is counted apart.
    .addColumn('s4xx', 'integer', (c) => c.notNull())
    .addColumn('s5xx', 'integer', (c) => c.notNull())
    .addColumn('s429', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('request_log_hours_pkey', ['account_id', 'hour', 'writer'])
    .execute();
  await db.schema
    .createIndex('request_log_hours_hour')
    .on('request_log_hours')
    .column('hour')
    .execute();
}
