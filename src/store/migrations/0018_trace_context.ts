import type { Kysely } from 'kysely';

/**
 * `events.traceparent` and `messages.traceparent`: the W3C trace context of the work that wrote
 * the row, while traces are on (src/ops/tracing.ts), so that each delivery of an event or a
 * message is a span of the same trace (docs/decisions/0073-traces.md). Null for rows written
 * without one, and before.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('events').addColumn('traceparent', 'text').execute();
  await db.schema.alterTable('messages').addColumn('traceparent', 'text').execute();
}
