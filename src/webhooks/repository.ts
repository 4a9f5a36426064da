import { type ExpressionBuilder, type Insertable, sql, type Updateable } from 'kysely';
import { isPostgres, type ReadDb, type Tx } from '../store/handles.js';
import type { Lease } from '../store/lease.js';
import { preparedQuery } from '../store/prepared.js';
import type {
  Tables,
  WebhookDeliveriesTable,
  WebhookDeliveryRow,
  WebhookEndpointRow,
  WebhookEndpointsTable,
} from '../store/tables.js';
import { wants } from './events-repository.js';

/** The event types an endpoint wants, as given and as answered: `*` for every type. */
type Wanted = { event_types: readonly string[] };

/** Writes the types an endpoint wants (none written yet); them, sorted, as answered. */
async function insertTypes(
  tx: Tx,
  endpointId: string,
  types: readonly string[],
): Promise<string[]> {
  if (types.length > 0) {
    await tx
      .insertInto('webhook_endpoint_events')
      .values(types.map((type) => ({ endpoint_id: endpointId, event_type: type })))
      .execute();
  }
  return [...types].sort();
}

/** The rows with the types each endpoint wants, sorted. */
async function withTypes(
  db: ReadDb,
  rows: ReadonlyArray<Omit<WebhookEndpointRow, 'event_types'>>,
): Promise<WebhookEndpointRow[]> {
  const types = new Map<string, string[]>(rows.map((row) => [row.id, []]));
  if (rows.length > 0) {
    const wanted = await db
      .selectFrom('webhook_endpoint_events')
      .select(['endpoint_id', 'event_type'])
      .where('endpoint_id', 'in', [...types.keys()])
      .execute();
    for (const row of wanted) types.get(row.endpoint_id)?.push(row.event_type);
  }
  return rows.map((row) => ({ ...row, event_types: (types.get(row.id) ?? []).sort() }));
}

export async function insertEndpoint(
  tx: Tx,
  row: Insertable<WebhookEndpointsTable> & Wanted,
): Promise<WebhookEndpointRow> {
  const { event_types, ...columns } = row;
  const inserted = await tx
    .insertInto('webhook_endpoints')
    .values(columns)
    .returningAll()
    .executeTakeFirstOrThrow();
  return { ...inserted, event_types: await insertTypes(tx, inserted.id, event_types) };
}

export function countEndpoints(db: ReadDb, accountId: string): Promise<number> {
  return db
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirst()
    .then((row) => Number(row?.n ?? 0));
}

export async function findEndpoint(
  db: ReadDb,
  accountId: string,
  id: string,
): Promise<WebhookEndpointRow | undefined> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && (await withTypes(db, [row]))[0];
}

export async function listEndpoints(db: ReadDb, accountId: string): Promise<WebhookEndpointRow[]> {
  const rows = await db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('id')
    .execute();
  return withTypes(db, rows);
}

/** Changes the endpoint's columns and, when given, the types it wants (all of them). */
export async function updateEndpoint(
  tx: Tx,
  accountId: string,
  id: string,
  changes: Updateable<WebhookEndpointsTable> & Partial<Wanted>,
): Promise<WebhookEndpointRow | undefined> {
  const { event_types, ...columns } = changes;
  const row = await tx
    .updateTable('webhook_endpoints')
    .set(columns)
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
  if (!row) return undefined;
  if (event_types === undefined) return (await withTypes(tx, [row]))[0];
  await tx.deleteFrom('webhook_endpoint_events').where('endpoint_id', '=', id).execute();
  return { ...row, event_types: await insertTypes(tx, id, event_types) };
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

/**
 * A recovery's part of the store: the endpoint's deliveries of events written since `since`
 * that ended (`failed`, or with `all` also `delivered`), or that failed and wait for their next
 * attempt (docs/decisions/0088-recovery-sends-waiting-now.md), put back in line due now; and
 * with `all` a delivery made for each event since then of a type it wants that it has none of;
 * `limit` of each at most, oldest event first. How many were queued, and whether a limit was
 * reached (so that more may be left).
 */
export async function requeueSince(
  tx: Tx,
  accountId: string,
  endpointId: string,
  since: string,
  now: string,
  all: boolean,
  limit: number,
): Promise<{ queued: number; more: boolean }> {
  const due = tx
    .selectFrom('webhook_deliveries')
    .select('event_id')
    .where('account_id', '=', accountId)
    .where('endpoint_id', '=', endpointId)
    .where('created_at', '>=', since)
    .where((eb) =>
      eb.or([
        eb('status', 'in', all ? ['failed', 'delivered'] : ['failed']),
        eb.and([
          eb('status', '=', 'pending'),
          eb('attempts', '>', 0),
          eb('available_at', '>', now),
        ]),
      ]),
    )
    .orderBy('event_id')
    .limit(limit);
  const requeued = await tx
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', available_at: now, updated_at: now })
    .where('account_id', '=', accountId)
    .where('endpoint_id', '=', endpointId)
    .where('event_id', 'in', due)
    .executeTakeFirst();
  const again = Number(requeued.numUpdatedRows);
  let added = 0;
  if (all) {
    const dialect = isPostgres(tx) ? 'postgres' : 'sqlite';
    const inserted = await sql`insert into webhook_deliveries
        (endpoint_id, event_id, account_id, resource, status, attempts, available_at,
         created_at, updated_at)
      select ${endpointId}, ev.id, ev.account_id, ev.resource, 'pending', 0, ${now},
        ev.created_at, ${now}
      from events ev
      where ev.account_id = ${accountId} and ev.created_at >= ${since}
        and ev.type <> 'webhook.test'
        and ${wants(dialect, sql`${endpointId}`, sql.ref('ev.type'))}
        and not exists (select 1 from webhook_deliveries d
          where d.endpoint_id = ${endpointId} and d.event_id = ev.id)
      order by ev.id
      limit ${limit}`.execute(tx);
    added = Number(inserted.numAffectedRows ?? 0);
  }
  return { queued: again + added, more: again === limit || added === limit };
}

/** How many deliveries a dispatcher may take, and how many may be in flight at once. */
export interface ClaimCaps {
  /** The dispatcher's free slots. */
  take: number;
  /** Deliveries in flight to one endpoint, on every instance. */
  perEndpoint: number;
  /** Deliveries in flight for one account, on every instance. */
  perAccount: number;
  /** Deliveries in flight to the other endpoints together, on every instance, than those
   * answering (which took a delivery and failed none since, and have none in flight for more
   * than `slowAfterMs`): the rest of the slots are kept for those. */
  slow: number;
  slowAfterMs: number;
}

/** A delivery, by its key. */
export interface DeliveryKey {
  endpoint_id: string;
  event_id: string;
}

/** A delivery chosen to claim, and how its endpoint stood: 0 answering, else slow to answer. */
export interface ClaimChoice extends DeliveryKey {
  level: number;
}

/**
 * Whether the delivery `alias` is the first open one (pending or sending) of its resource to its
 * endpoint: the events of one resource reach an endpoint in order.
 */
function firstOfResource(alias: 'd' | 'x') {
  const ref = (column: keyof WebhookDeliveriesTable) => sql.ref(`${alias}.${column}`);
  return sql<boolean>`not exists (
    select 1 from webhook_deliveries p
    where p.endpoint_id = ${ref('endpoint_id')} and p.resource = ${ref('resource')}
      and p.event_id < ${ref('event_id')} and p.status in ('pending', 'sending'))`;
}

/** Whether the delivery `d` may go out: first of its resource, to an enabled endpoint. */
const mayGo = sql<boolean>`${firstOfResource('d')} and exists (
  select 1 from webhook_endpoints e where e.id = d.endpoint_id and e.enabled)`;

/**
 * How an endpoint `w` stands: 0 answering (it has taken a delivery, and failed none since), 1
 * unproven (it never has), 2 failing.
 */
const endpointLevel = sql<number>`case when w.failing_since is not null then 2
  when w.answered_at is null then 1 else 0 end`;

/**
 * Each enabled endpoint's first `perEndpoint` due pending deliveries that may go, longest due
 * first: endpoint by endpoint, a range of the partial index of pending deliveries by
 * (endpoint_id, available_at) each. (Left to themselves, both planners read every delivery and
 * ran the subquery for each.)
 */
function firstDue(db: ReadDb, p: { now: string; perEndpoint: number }) {
  const firsts = sql`select x.endpoint_id, x.event_id, x.account_id from webhook_deliveries x
    where x.endpoint_id = w.id and x.status = 'pending' and x.available_at <= ${p.now}
      and ${firstOfResource('x')}
    order by x.available_at
    limit ${p.perEndpoint}`;
  const level = sql`${endpointLevel} as level`;
  if (isPostgres(db)) {
    return sql`select f.endpoint_id, f.event_id, f.account_id, 1 as due, ${level}
      from webhook_endpoints w cross join lateral (${firsts}) f
      where w.enabled`;
  }
  // No LATERAL in SQLite: the chosen deliveries looked up by key, endpoint by endpoint (SQLite
  // keeps a CROSS JOIN's order as written).
  return sql`select d.endpoint_id, d.event_id, d.account_id, 1 as due, ${level}
    from webhook_endpoints w cross join webhook_deliveries d
    where w.enabled and d.endpoint_id = w.id
      and d.event_id in (select f.event_id from (${firsts}) f)`;
}

/**
 * The due deliveries a dispatcher with `take` free slots claims next, fairly, within ClaimCaps
 * counted over what every instance is sending (a live lease), the accounts taking turns
 * (docs/decisions/0001-webhook-delivery-slots.md). What is ranked is small whatever the
 * backlog: the deliveries being sent and each endpoint's first due ones (firstDue). A read: the
 * claim that follows (claimDeliveries) checks again that each is still due.
 */
const claimableQuery = preparedQuery(
  (db, p: Omit<ClaimCaps, 'slowAfterMs'> & { now: string; slowSince: string }) => ({
    compile: () =>
      sql<ClaimChoice>`with open as (
          select d.endpoint_id, d.event_id, d.account_id,
            case when d.lease_until >= ${p.now} then 0 else 1 end as due,
            -- An answering endpoint with a delivery in flight for long is slow (1) for now.
            case when w.failing_since is not null then 2
              when w.answered_at is null
                or (d.lease_until >= ${p.now} and d.updated_at < ${p.slowSince}) then 1
              else 0 end as level
          from webhook_deliveries d join webhook_endpoints w on w.id = d.endpoint_id
          where d.status = 'sending' and (d.lease_until >= ${p.now} or (${mayGo}))
          union all
          ${firstDue(db, p)}
        ),
        by_endpoint as (
          select endpoint_id, event_id, account_id, due,
            max(level) over (partition by endpoint_id) as level,
            row_number() over (partition by endpoint_id order by due, event_id) as endpoint_rank
          from open
        ),
        by_account as (
          select endpoint_id, event_id, due, level,
            row_number() over (partition by account_id order by due, event_id) as account_rank
          from by_endpoint
          where endpoint_rank <= ${p.perEndpoint}
        ),
        by_pool as (
          select endpoint_id, event_id, due, level, account_rank,
            row_number() over (
              partition by case when level = 0 then 0 else 1 end
              order by due, account_rank, level, event_id) as pool_rank
          from by_account
          -- Ranked after the account's deliveries in flight: perAccount in all, at most.
          where due = 0 or account_rank <= ${p.perAccount}
        )
        select endpoint_id, event_id, level from by_pool
        where due = 1 and (level = 0 or pool_rank <= ${p.slow})
        -- In a turn, answering endpoints first, failing ones last.
        order by account_rank, level, event_id
        limit ${p.take}`.compile(db),
  }),
);

/** What claimableQuery chooses (window functions: SQLite 3.25 or later). */
export function claimable(db: ReadDb, now: string, caps: ClaimCaps): Promise<ClaimChoice[]> {
  const { slowAfterMs, ...rest } = caps;
  const slowSince = new Date(Date.parse(now) - slowAfterMs).toISOString();
  return claimableQuery(db, { now, slowSince, ...rest });
}

/** Whether the delivery `d` is due: pending and its time come, or sending and its lease run out. */
function dueAt(now: string) {
  return (eb: ExpressionBuilder<Tables & { d: WebhookDeliveriesTable }, 'd'>) =>
    eb.or([
      eb.and([eb('d.status', '=', 'pending'), eb('d.available_at', '<=', now)]),
      eb.and([eb('d.status', '=', 'sending'), eb('d.lease_until', '<', now)]),
    ]);
}

/**
 * Claims the chosen deliveries under a lease, those still due and still first of their
 * resource: one another dispatcher claimed since the choice is left to it (PostgreSQL checks
 * the WHERE again after the row lock). The caps are not checked again (docs/decisions/0001).
 */
export function claimDeliveries(
  tx: Tx,
  lease: Lease,
  chosen: readonly DeliveryKey[],
): Promise<WebhookDeliveryRow[]> {
  if (chosen.length === 0) return Promise.resolve([]);
  return tx
    .updateTable('webhook_deliveries as d')
    .set((eb) => ({
      status: 'sending',
      attempts: eb('d.attempts', '+', 1),
      lease_token: lease.token,
      lease_until: lease.until,
      updated_at: lease.now,
    }))
    .where((eb) =>
      eb.or(
        chosen.map((key) =>
          eb.and([eb('d.endpoint_id', '=', key.endpoint_id), eb('d.event_id', '=', key.event_id)]),
        ),
      ),
    )
    .where(dueAt(lease.now))
    .where(mayGo)
    .returningAll()
    .execute();
}

/**
 * Whether any delivery may be due by `now`: a read on the claim's index, so an idle
 * dispatcher polls without a write (a claim is a write transaction).
 */
export async function anyDue(db: ReadDb, now: string): Promise<boolean> {
  const row = await db
    .selectFrom('webhook_deliveries as d')
    .select('d.event_id')
    .where(dueAt(now))
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** What each delivery claimed under the lease `token` needs to go out: its event and its endpoint. */
export function outgoing(db: ReadDb, token: string) {
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
      'e.traceparent as event_traceparent',
      'w.url',
      'w.secret',
      'w.previous_secret',
      'w.previous_secret_until',
    ])
    .where('d.lease_token', '=', token)
    .orderBy('d.event_id')
    .execute();
}

export type Outgoing = Awaited<ReturnType<typeof outgoing>>[number];

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

/**
 * An endpoint answered well: it is failing no more, and answering since `at` (written only on
 * its first success and after failures).
 */
export async function endpointSucceeded(tx: Tx, endpointId: string, at: string): Promise<void> {
  await tx
    .updateTable('webhook_endpoints')
    .set({ failing_since: null, answered_at: at })
    .where('id', '=', endpointId)
    .where((w) => w.or([w('failing_since', 'is not', null), w('answered_at', 'is', null)]))
    .execute();
}

/**
 * An endpoint failed to take an event written at `since`: it is failing since then unless it
 * already was; disabled when it has been failing since `disableBefore` or earlier. The endpoint
 * when this disabled it.
 */
export async function endpointFailed(
  tx: Tx,
  endpointId: string,
  since: string,
  now: string,
  disableBefore: string,
  reason: string,
): Promise<{ id: string; account_id: string } | undefined> {
  await tx
    .updateTable('webhook_endpoints')
    .set({ failing_since: since })
    .where('id', '=', endpointId)
    .where('failing_since', 'is', null)
    .execute();
  return tx
    .updateTable('webhook_endpoints')
    .set({
      enabled: false,
      disabled_reason: reason,
      updated_at: now,
    })
    .where('id', '=', endpointId)
    .where('enabled', '=', true)
    .where('failing_since', '<=', disableBefore)
    .returning(['id', 'account_id'])
    .executeTakeFirst();
}

const anyEndpointWantsQuery = preparedQuery((db, p: { accountId: string; type: string }) => ({
  compile: () =>
    sql<{ id: string }>`select e.id from webhook_endpoints e
      where e.account_id = ${p.accountId} and e.enabled
        and ${wants(isPostgres(db) ? 'postgres' : 'sqlite', sql.ref('e.id'), p.type)}
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
  const rows = await anyEndpointWantsQuery(db, { accountId, type });
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

/** Pending deliveries due at `now`, counted up to `cap` (a bounded read whatever the backlog),
 * and when the longest-waiting one fell due (null: none). For the backlog's gauges. */
export async function dueBacklog(
  db: ReadDb,
  now: string,
  cap: number,
): Promise<{ due: number; oldest: Date | null }> {
  const due = db
    .selectFrom('webhook_deliveries')
    .where('status', '=', 'pending')
    .where('available_at', '<=', now);
  const [counted, first] = await Promise.all([
    db
      .selectFrom(due.select(sql<number>`1`.as('one')).limit(cap).as('d'))
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirst(),
    due.select((eb) => eb.fn.min('available_at').as('oldest')).executeTakeFirst(),
  ]);
  return {
    due: Number(counted?.n ?? 0),
    oldest: first?.oldest ? new Date(first.oldest as string | Date) : null,
  };
}
