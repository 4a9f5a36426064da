import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.js';

/**
 * For the dispatcher's fair claim (docs/decisions/0001-webhook-delivery-slots.md): the partial
 * index of pending deliveries by endpoint and `available_at`, and `answered_at`, set here for
 * the endpoints that have taken a delivery already. Named 0011, after 0010: a database that ran
 * 0010 refuses a migration named before it.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema
    .createIndex('webhook_deliveries_pending')
    .on('webhook_deliveries')
    .columns(['endpoint_id', 'available_at'])
    .where(sql.ref('status'), '=', sql.lit('pending'))
    .execute();
  const ts = dialect === 'postgres' ? 'timestamptz' : 'text';
  await db.schema.alterTable('webhook_endpoints').addColumn('answered_at', sql.raw(ts)).execute();
  await sql`update webhook_endpoints set answered_at = updated_at
    where failing_since is null and exists (
      select 1 from webhook_deliveries d
      where d.endpoint_id = webhook_endpoints.id and d.status = 'delivered')`.execute(db);
}
