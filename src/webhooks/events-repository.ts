import { type RawBuilder, sql } from 'kysely';
import { deleteBatch, type Rows } from '../store/batch-delete.js';
import type { Dialect } from '../store/database.js';
import { isPostgres, type ReadDb, type Tx } from '../store/handles.js';
import { preparedWrite } from '../store/prepared.js';
import { columnList, type EventRow, type WebhookDeliveryRow } from '../store/tables.js';

/** An event as inserted. */
export type NewEventRow = {
  account_id: string;
  id: string;
  type: string;
  resource: string;
  data: string;
  created_at: string;
  /** The trace context of the write, while traces are on (src/ops/tracing.ts). */
  traceparent: string | null;
};

/** An event's columns, in the order the inserts give their values. */
export const EVENT_COLUMNS = columnList('events', [
  'account_id',
  'id',
  'type',
  'resource',
  'data',
  'created_at',
]);
/** What the fan-out needs of an event (fanOutOf's source). */
export const FANNED_COLUMNS = columnList('events', [
  'account_id',
  'id',
  'type',
  'resource',
  'created_at',
]);
/** A new delivery's columns, in the order the fan-out selects their values. */
export const DELIVERY_COLUMNS = columnList('webhook_deliveries', [
  'endpoint_id',
  'event_id',
  'account_id',
  'resource',
  'status',
  'attempts',
  'available_at',
  'created_at',
  'updated_at',
]);

/**
 * Whether the endpoint `endpoint` wants events of `type`: it has a row in
 * webhook_endpoint_events for the type, or for `*`, found by that table's key. Written for
 * each planner, one EXISTS on PostgreSQL and two on SQLite (docs/decisions/0010-typed-columns.md).
 */
export function wants(
  dialect: Dialect,
  endpoint: RawBuilder<unknown>,
  type: string | RawBuilder<unknown>,
) {
  const wanted = (types: RawBuilder<unknown>) => sql<boolean>`exists (
    select 1 from webhook_endpoint_events t
    where t.endpoint_id = ${endpoint} and t.event_type ${types})`;
  if (dialect === 'postgres') return wanted(sql`in (${type}, '*')`);
  return sql<boolean>`(${wanted(sql`= ${type}`)} or ${wanted(sql`= '*'`)})`;
}

/**
 * PostgreSQL: the deliveries of the events `source` names (a CTE of inserted events, returning
 * FANNED_COLUMNS), one per enabled endpoint of the event's
 * account that wants its type: the fan-out, for `insert into webhook_deliveries`.
 */
export function fanOutOf(source: RawBuilder<unknown>) {
  return sql`select e.id, ev.id, ev.account_id, ev.resource, 'pending', 0,
      ev.created_at, ev.created_at, ev.created_at
    from ${source} ev
    join webhook_endpoints e on e.account_id = ev.account_id
    where e.enabled and ${wants('postgres', sql.ref('e.id'), sql.ref('ev.type'))}`;
}

/**
 * SQLite: the event, then a delivery for each enabled endpoint of the account that wants its
 * type. Two prepared statements on the batch's connection, microseconds each.
 */
const insertEventSqlite = preparedWrite((tx: Tx, p: NewEventRow) => ({
  compile: () =>
    sql`insert into events (${EVENT_COLUMNS}, traceparent)
      values (${p.account_id}, ${p.id}, ${p.type}, ${p.resource}, ${p.data}, ${p.created_at},
        ${p.traceparent})`.compile(tx),
}));
const fanOutSqlite = preparedWrite((tx: Tx, p: NewEventRow) => ({
  compile: () =>
    sql`insert into webhook_deliveries (${DELIVERY_COLUMNS})
      select e.id, ${p.id}, e.account_id, ${p.resource}, 'pending', 0,
        ${p.created_at}, ${p.created_at}, ${p.created_at}
      from webhook_endpoints e
      where e.account_id = ${p.account_id} and e.enabled
        and ${wants('sqlite', sql.ref('e.id'), p.type)}`.compile(tx),
}));

/**
 * PostgreSQL: both in one statement (a data-modifying CTE), so an event costs its write no
 * round trip of its own: it is pipelined with the write's other statements.
 */
const insertEventPostgres = preparedWrite((tx: Tx, p: NewEventRow) => ({
  compile: () =>
    sql`with event as (
        insert into events (${EVENT_COLUMNS}, traceparent)
        values (${p.account_id}, ${p.id}, ${p.type}, ${p.resource}, ${p.data}, ${p.created_at},
          ${p.traceparent})
        returning ${FANNED_COLUMNS}
      )
      insert into webhook_deliveries (${DELIVERY_COLUMNS})
      ${fanOutOf(sql`event`)}`.compile(tx),
}));

/**
 * Writes an event and its deliveries (the outbox) in the write's transaction: they commit
 * with the change they report, or not at all.
 */
export async function insertEvent(tx: Tx, row: NewEventRow): Promise<void> {
  if (isPostgres(tx)) {
    await insertEventPostgres(tx, row);
    return;
  }
  await insertEventSqlite(tx, row);
  await fanOutSqlite(tx, row);
}

/**
 * Writes a test event and one delivery of it, to one endpoint (whatever the types it wants).
 */
export async function insertTestEvent(
  tx: Tx,
  row: NewEventRow,
  endpointId: string,
): Promise<WebhookDeliveryRow> {
  await tx.insertInto('events').values(row).execute();
  return tx
    .insertInto('webhook_deliveries')
    .values({
      endpoint_id: endpointId,
      event_id: row.id,
      account_id: row.account_id,
      resource: row.resource,
      status: 'pending',
      attempts: 0,
      available_at: row.created_at,
      created_at: row.created_at,
      updated_at: row.created_at,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A keyset page of an account's events since `since`, oldest first, of one type if given. */
export function listEvents(
  db: ReadDb,
  accountId: string,
  filter: { type?: string | undefined; since: string; afterId?: string | undefined; take: number },
): Promise<EventRow[]> {
  return db
    .selectFrom('events')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('created_at', '>=', filter.since)
    .$if(filter.type !== undefined, (q) => q.where('type', '=', filter.type as string))
    .$if(filter.afterId !== undefined, (q) => q.where('id', '>', filter.afterId as string))
    .orderBy('id')
    .limit(filter.take)
    .execute();
}

/** Deletes up to `limit` events written before `before`; how many it deleted. */
export function deleteOldEvents(tx: Tx, before: string, limit: number): Promise<number> {
  const old = (rows: Rows<'events'>) => rows.where('created_at', '<', before);
  return deleteBatch(tx, 'events', ['account_id', 'id'], old, limit);
}

/** Deletes up to `limit` deliveries of events written before `before`; how many it deleted. */
export function deleteOldDeliveries(tx: Tx, before: string, limit: number): Promise<number> {
  const old = (rows: Rows<'webhook_deliveries'>) =>
    rows.where('created_at', '<', before).where('status', '!=', 'sending');
  return deleteBatch(tx, 'webhook_deliveries', ['endpoint_id', 'event_id'], old, limit);
}
