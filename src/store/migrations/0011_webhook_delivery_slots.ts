import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.js';

/**
 * For the dispatcher's fair claim (claimable, src/webhooks/repository.ts):
 *
 * - `webhook_deliveries_pending`: each endpoint's pending deliveries by `available_at`, to
 *   read each enabled endpoint's first due ones. Partial: the delivered and failed rows (most
 *   of the table) are not in it.
 * - `webhook_endpoints.answered_at`: when the endpoint first took a delivery (a 2xx), or
 *   since it last failed. An endpoint that never answered shares the slots kept for slow and
 *   failing ones. Set here for the endpoints that have taken a delivery already.
 *
 * Named 0011, after 0010: a database that ran 0010 refuses a migration named before it.
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
