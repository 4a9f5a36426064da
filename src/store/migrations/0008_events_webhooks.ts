import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.js';

/**
 * Events, webhook endpoints and their deliveries (src/webhooks/events.ts, webhooks.ts).
 *
 * - `events`: what happened to an account's resources, written in the transaction of the
 *   change it reports (the transactional outbox). Ids (`evt_…`) sort by time.
 * - `webhook_endpoints`: where an account wants events POSTed; the signing secret encrypted
 *   under the server's key (WEBHOOK_SECRET_KEY), the previous one kept during a rotation.
 * - `webhook_deliveries`: one row per event and endpoint it is for, written with the event
 *   (the outbox the dispatcher drains, under leases like the message queue's). Its key is the
 *   endpoint and the event: an event reaches an endpoint at most once per row.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = dialect === 'postgres' ? 'timestamptz' : 'text';
  await db.schema
    .createTable('events')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    // `pets/7`, `orders/3`, `messages/msg_…`: deliveries of one resource go out in order.
    .addColumn('resource', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', sql.raw(ts), (c) => c.notNull())
    .addPrimaryKeyConstraint('events_pkey', ['account_id', 'id'])
    .execute();
  // The sweep of events past their 30 days.
  await db.schema.createIndex('events_created_at').on('events').column('created_at').execute();

  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('url', 'text', (c) => c.notNull())
    // The event types, each between spaces (` pet.created order.placed `), or ` * `: matched
    // by substring (instr, strpos) by the insert that fans an event out, on both stores.
    .addColumn('event_types', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('disabled_reason', 'text')
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_until', sql.raw(ts))
    // The first failure since the last success: an endpoint failing long enough is disabled.
    .addColumn('failing_since', sql.raw(ts))
    .addColumn('created_at', sql.raw(ts), (c) => c.notNull())
    .addColumn('updated_at', sql.raw(ts), (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('webhook_endpoints_account')
    .on('webhook_endpoints')
    .columns(['account_id', 'id'])
    .execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('endpoint_id', 'text', (c) =>
      c.notNull().references('webhook_endpoints.id').onDelete('cascade'),
    )
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('resource', 'text', (c) => c.notNull())
    // pending → sending (under a lease) → delivered, back to pending to retry, or failed.
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('available_at', sql.raw(ts), (c) => c.notNull())
    .addColumn('lease_token', 'text')
    .addColumn('lease_until', sql.raw(ts))
    .addColumn('last_status_code', 'integer')
    // The first 1 KB of the last answer's body, or why there was none.
    .addColumn('last_response', 'text')
    .addColumn('last_attempt_at', sql.raw(ts))
    .addColumn('created_at', sql.raw(ts), (c) => c.notNull())
    .addColumn('updated_at', sql.raw(ts), (c) => c.notNull())
    .addPrimaryKeyConstraint('webhook_deliveries_pkey', ['endpoint_id', 'event_id'])
    .execute();
  // The dispatcher's claim: due pending deliveries, and sending ones whose lease ran out.
  await db.schema
    .createIndex('webhook_deliveries_due')
    .on('webhook_deliveries')
    .columns(['status', 'available_at'])
    .execute();
  // Per-resource order: is an earlier delivery of this resource to this endpoint still open?
  await db.schema
    .createIndex('webhook_deliveries_resource')
    .on('webhook_deliveries')
    .columns(['endpoint_id', 'resource', 'event_id'])
    .execute();
}
