import { type Insertable, PostgresAdapter, sql, type Updateable } from 'kysely';
import type { Database } from './database.js';
import { typeNeedle } from './events-repository.js';
import type { ReadDb, Tx } from './handles.js';
import { preparedQuery } from './prepared.js';
import type { WebhookDeliveryRow, WebhookEndpointRow, WebhookEndpointsTable } from './tables.js';

export async function insertEndpoint(
  tx: Tx,
  row: Insertable<WebhookEndpointsTable>,
): Promise<WebhookEndpointRow> {
  return tx.insertInto('webhook_endpoints').values(row).returningAll().executeTakeFirstOrThrow();
}

export function countEndpoints(db: ReadDb, accountId: string): Promise<number> {
  return db
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirst()
    .then((row) => Number(row?.n ?? 0));
}

export function findEndpoint(
  db: ReadDb,
  accountId: string,
  id: string,
): Promise<WebhookEndpointRow | undefined> {
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export function listEndpoints(db: ReadDb, accountId: string): Promise<WebhookEndpointRow[]> {
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('id')
    .execute();
}

export function updateEndpoint(
  tx: Tx,
  accountId: string,
  id: string,
  changes: Updateable<WebhookEndpointsTable>,
): Promise<WebhookEndpointRow | undefined> {
  return tx
    .updateTable('webhook_endpoints')
    .set(changes)
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** Removes the endpoint and every delivery to it; false when it was not the account's. */
export async function deleteEndpoint(tx: Tx, accountId: string, id: string): Promise<boolean> {
  await tx
    .deleteFrom('webhook_deliveries')
    .where('account_id', '=', accountId)
    .where('endpoint_id', '=', id)
    .execute();
  const result = await tx
    .deleteFrom('webhook_endpoints')
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/** A delivery with its event's type. */
export type DeliveryWithType = WebhookDeliveryRow & { event_type: string };

/** An endpoint's deliveries, each with its event's type. */
function deliveriesOf(db: ReadDb, accountId: string, endpointId: string) {
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('events as e', (join) =>
      join.onRef('e.account_id', '=', 'd.account_id').onRef('e.id', '=', 'd.event_id'),
    )
    .selectAll('d')
    .select('e.type as event_type')
    .where('d.account_id', '=', accountId)
    .where('d.endpoint_id', '=', endpointId);
}

/** A keyset page of an endpoint's deliveries, newest event first. */
export function listDeliveries(
  db: ReadDb,
  accountId: string,
  endpointId: string,
  filter: { beforeEventId?: string | undefined; take: number },
): Promise<DeliveryWithType[]> {
  return deliveriesOf(db, accountId, endpointId)
    .$if(filter.beforeEventId !== undefined, (q) =>
      q.where('d.event_id', '<', filter.beforeEventId as string),
    )
    .orderBy('d.event_id', 'desc')
    .limit(filter.take)
    .execute();
}

export function findDelivery(
  db: ReadDb,
  accountId: string,
  endpointId: string,
  eventId: string,
): Promise<DeliveryWithType | undefined> {
  return deliveriesOf(db, accountId, endpointId)
    .where('d.event_id', '=', eventId)
    .executeTakeFirst();
}

/** Makes a delivery due again now, unless it is being sent; the row after, if any changed. */
export function requeueDelivery(
  tx: Tx,
  accountId: string,
  endpointId: string,
  eventId: string,
  now: string,
): Promise<WebhookDeliveryRow | undefined> {
  return tx
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', available_at: now, updated_at: now })
    .where('account_id', '=', accountId)
    .where('endpoint_id', '=', endpointId)
    .where('event_id', '=', eventId)
    .where('status', '!=', 'sending')
    .returningAll()
    .executeTakeFirst();
}

export interface DeliveryLease {
  token: string;
  now: string;
  until: string;
}

/**
 * Claims up to `limit` due deliveries under a lease: pending ones whose time has come, and
 * sending ones whose lease ran out, to enabled endpoints. A delivery waits while an earlier
 * one of the same resource to the same endpoint is still open (pending or sending), so the
 * events of one resource reach an endpoint in order. On PostgreSQL, `FOR UPDATE SKIP LOCKED`
 * lets dispatchers of several instances claim side by side without taking the same rows.
 */
export function claimDeliveries(
  database: Pick<Database, 'write' | 'dialect'>,
  lease: DeliveryLease,
  limit: number,
): Promise<WebhookDeliveryRow[]> {
  const postgres = database.dialect === 'postgres';
  return database.write(
    (tx) =>
      tx
        .updateTable('webhook_deliveries')
        .set((eb) => ({
          status: 'sending',
          attempts: eb('attempts', '+', 1),
          lease_token: lease.token,
          lease_until: lease.until,
          updated_at: lease.now,
        }))
        .where((eb) =>
          eb(
            eb.refTuple('endpoint_id', 'event_id'),
            'in',
            eb
              .selectFrom('webhook_deliveries as d')
              .select(['d.endpoint_id', 'd.event_id'])
              .where((w) =>
                w.or([
                  w.and([w('d.status', '=', 'pending'), w('d.available_at', '<=', lease.now)]),
                  w.and([w('d.status', '=', 'sending'), w('d.lease_until', '<', lease.now)]),
                ]),
              )
              .where(({ exists, not, selectFrom }) =>
                not(
                  exists(
                    selectFrom('webhook_deliveries as p')
                      .select('p.event_id')
                      .whereRef('p.endpoint_id', '=', 'd.endpoint_id')
                      .whereRef('p.resource', '=', 'd.resource')
                      .whereRef('p.event_id', '<', 'd.event_id')
                      .where('p.status', 'in', ['pending', 'sending']),
                  ),
                ),
              )
              .where(({ exists, selectFrom }) =>
                exists(
                  selectFrom('webhook_endpoints as w')
                    .select('w.id')
                    .whereRef('w.id', '=', 'd.endpoint_id')
                    .where('w.enabled', '=', 1),
                ),
              )
              .orderBy('d.event_id')
              .limit(limit)
              .$if(postgres, (q) => q.forUpdate().skipLocked())
              .$asTuple('endpoint_id', 'event_id'),
          ),
        )
        .returningAll()
        .execute(),
    { atomic: true },
  );
}

/**
 * Whether any delivery may be due by `now`: a read on the claim's index, so an idle
 * dispatcher polls without a write (a claim is a write transaction).
 */
export async function anyDue(db: ReadDb, now: string): Promise<boolean> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select('event_id')
    .where((w) =>
      w.or([
        w.and([w('status', '=', 'pending'), w('available_at', '<=', now)]),
        w.and([w('status', '=', 'sending'), w('lease_until', '<', now)]),
      ]),
    )
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** What a claimed delivery needs to go out: its event and its endpoint. */
export interface Outgoing {
  endpoint_id: string;
  event_id: string;
  account_id: string;
  attempts: number;
  created_at: Date | string;
  event_type: string;
  event_data: string;
  event_created_at: Date | string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: Date | string | null;
}

export function outgoing(db: ReadDb, token: string): Promise<Outgoing[]> {
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('events as e', (join) =>
      join.onRef('e.account_id', '=', 'd.account_id').onRef('e.id', '=', 'd.event_id'),
    )
    .innerJoin('webhook_endpoints as w', 'w.id', 'd.endpoint_id')
    .select([
      'd.endpoint_id',
      'd.event_id',
      'd.account_id',
      'd.attempts',
      'd.created_at',
      'e.type as event_type',
      'e.data as event_data',
      'e.created_at as event_created_at',
      'w.url',
      'w.secret',
      'w.previous_secret',
      'w.previous_secret_until',
    ])
    .where('d.lease_token', '=', token)
    .orderBy('d.event_id')
    .execute();
}

/** Ends a delivery's lease with its outcome; false when the lease was lost. */
export async function settleDelivery(
  tx: Tx,
  endpointId: string,
  eventId: string,
  token: string,
  changes: {
    status: 'pending' | 'delivered' | 'failed';
    available_at?: string;
    last_status_code: number | null;
    last_response: string | null;
    at: string;
  },
): Promise<boolean> {
  const row = await tx
    .updateTable('webhook_deliveries')
    .set({
      status: changes.status,
      ...(changes.available_at !== undefined && { available_at: changes.available_at }),
      last_status_code: changes.last_status_code,
      last_response: changes.last_response,
      last_attempt_at: changes.at,
      updated_at: changes.at,
      lease_token: null,
      lease_until: null,
    })
    .where('endpoint_id', '=', endpointId)
    .where('event_id', '=', eventId)
    .where('lease_token', '=', token)
    .returning('event_id')
    .executeTakeFirst();
  return row !== undefined;
}

/** An endpoint answered well: it is failing no more. */
export async function endpointSucceeded(tx: Tx, endpointId: string): Promise<void> {
  await tx
    .updateTable('webhook_endpoints')
    .set({ failing_since: null })
    .where('id', '=', endpointId)
    .where('failing_since', 'is not', null)
    .execute();
}

/**
 * An endpoint failed to take an event written at `since`: it is failing since then unless it
 * already was; disabled when it has been failing since `disableBefore` or earlier. True when
 * this disabled it.
 */
export async function endpointFailed(
  tx: Tx,
  endpointId: string,
  since: string,
  now: string,
  disableBefore: string,
  reason: string,
): Promise<boolean> {
  await tx
    .updateTable('webhook_endpoints')
    .set({ failing_since: since })
    .where('id', '=', endpointId)
    .where('failing_since', 'is', null)
    .execute();
  const disabled = await tx
    .updateTable('webhook_endpoints')
    .set({
      enabled: 0,
      disabled_reason: reason,
      updated_at: now,
    })
    .where('id', '=', endpointId)
    .where('enabled', '=', 1)
    .where('failing_since', '<=', disableBefore)
    .returning('id')
    .executeTakeFirst();
  return disabled !== undefined;
}

const anyEndpointWantsQuery = preparedQuery((db, p: { accountId: string; needle: string }) => ({
  compile: () =>
    sql<{ id: string }>`select id from webhook_endpoints
      where account_id = ${p.accountId} and enabled = 1
        and (event_types = ' * ' or ${containsNeedle(db, p.needle)})
      limit 1`.compile(db),
}));

/**
 * Whether any enabled endpoint of the account wants events of `type` (a prepared statement:
 * the log sink asks it for every message).
 */
export async function anyEndpointWants(
  db: ReadDb,
  accountId: string,
  type: string,
): Promise<boolean> {
  const rows = await anyEndpointWantsQuery(db, { accountId, needle: typeNeedle(type) });
  return rows.length > 0;
}

/** How the deliveries of one resource's events stand, by status, over the account's endpoints. */
export async function deliveryStatusCounts(
  db: ReadDb,
  accountId: string,
  resource: string,
): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
    // Through the account's endpoints: the (endpoint_id, resource, event_id) index.
    .where('endpoint_id', 'in', (eb) =>
      eb.selectFrom('webhook_endpoints').select('id').where('account_id', '=', accountId),
    )
    .where('resource', '=', resource)
    .groupBy('status')
    .execute();
  return new Map(rows.map((row) => [row.status, Number(row.n)]));
}

/** `event_types` holds `needle` (typeNeedle: a substring search, not LIKE). */
function containsNeedle(db: ReadDb, needle: string) {
  return db.getExecutor().adapter instanceof PostgresAdapter
    ? sql<boolean>`strpos(event_types, ${needle}::text) > 0`
    : sql<boolean>`instr(event_types, ${needle}) > 0`;
}
