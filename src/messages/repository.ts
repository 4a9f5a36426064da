import { type ExpressionBuilder, type SelectQueryBuilder, sql } from 'kysely';
import { isPostgres, type ReadDb, type Tx } from '../store/handles.js';
import type { Lease } from '../store/lease.js';
import { preparedWrite } from '../store/prepared.js';
import type { MessageRow, MessageStatus, NewMessageRow, Tables } from '../store/tables.js';
import {
  DELIVERY_COLUMNS,
  EVENT_COLUMNS,
  FANNED_COLUMNS,
  fanOutOf,
  insertEvent,
  type NewEventRow,
} from '../webhooks/events-repository.js';

export type { Lease } from '../store/lease.js';

/** A new message row (the hot path of POST /messages, so a prepared query). */
export const insertMessage = preparedWrite((tx, p: NewMessageRow) =>
  tx.insertInto('messages').values({
    id: p.id,
    account_id: p.account_id,
    message: p.message,
    status: p.status,
    attempts: p.attempts,
    available_at: p.available_at,
    lease_token: p.lease_token,
    lease_until: p.lease_until,
    failure_reason: p.failure_reason,
    created_at: p.created_at,
    updated_at: p.updated_at,
    traceparent: p.traceparent,
  }),
);

export function findMessage(
  db: ReadDb,
  accountId: string,
  id: string,
): Promise<MessageRow | undefined> {
  return db
    .selectFrom('messages')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Removes a message that has settled (sent or failed); undefined for one in flight or none. */
export function deleteSettledMessage(
  tx: Tx,
  accountId: string,
  id: string,
): Promise<MessageRow | undefined> {
  return tx
    .deleteFrom('messages')
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .where('status', 'in', ['sent', 'failed'])
    .returningAll()
    .executeTakeFirst();
}

/** Due and queued, or processing under a lease that has run out. */
function claimableAt(at: string) {
  return (eb: ExpressionBuilder<Tables, 'messages'>) =>
    eb.or([
      eb.and([eb('status', '=', 'queued'), eb('available_at', '<=', at)]),
      eb.and([eb('status', '=', 'processing'), eb('lease_until', '<', at)]),
    ]);
}

/** The columns a claim sets: processing, one more attempt, under the new lease. */
function underLease(lease: Lease) {
  return (eb: ExpressionBuilder<Tables, 'messages'>) => ({
    status: 'processing' as const,
    attempts: eb('attempts', '+', 1),
    lease_token: lease.token,
    lease_until: lease.until,
    updated_at: lease.now,
  });
}

/**
 * Takes up to `limit` claimable messages under a new lease: first processing ones whose lease
 * ran out, then due queued ones, oldest first, each one statement on a range of the
 * (status, available_at) index, not one `or` (docs/decisions/0040-message-delivery.md). On
 * PostgreSQL, `FOR UPDATE SKIP LOCKED` lets several workers claim side by side; SQLite runs one
 * writer at a time. The worker runs both in one write, all or nothing (its savepoint), so a
 * failure cannot leave rows leased to nobody.
 */
export async function claimDue(tx: Tx, lease: Lease, limit: number): Promise<MessageRow[]> {
  const postgres = isPostgres(tx);
  const ids = tx.selectFrom('messages').select('id');
  const claim = (pick: SelectQueryBuilder<Tables, 'messages', { id: string }>, take: number) =>
    tx
      .updateTable('messages')
      .set(underLease(lease))
      .where(
        'id',
        'in',
        pick.limit(take).$if(postgres, (q) => q.forUpdate().skipLocked()),
      )
      .returningAll()
      .execute();
  const expired = await claim(
    ids.where('status', '=', 'processing').where('lease_until', '<', lease.now),
    limit,
  );
  if (expired.length >= limit) return expired;
  const due = await claim(
    ids
      .where('status', '=', 'queued')
      .where('available_at', '<=', lease.now)
      .orderBy('available_at'),
    limit - expired.length,
  );
  return [...expired, ...due];
}

/** Claims one message by id, if it is claimable (the BullMQ path). */
export function claimOne(tx: Tx, id: string, lease: Lease): Promise<MessageRow | undefined> {
  return tx
    .updateTable('messages')
    .set(underLease(lease))
    .where('id', '=', id)
    .where(claimableAt(lease.now))
    .returningAll()
    .executeTakeFirst();
}

const settleQuery = preparedWrite(
  (
    tx,
    p: {
      id: string;
      token: string;
      status: MessageStatus;
      updated_at: string;
      /** Null keeps it. */
      available_at: string | null;
      failure_reason: string | null;
    },
  ) =>
    tx
      .updateTable('messages')
      .set({
        status: p.status,
        updated_at: p.updated_at,
        available_at: sql<string>`coalesce(${p.available_at}, available_at)`,
        failure_reason: p.failure_reason,
        lease_token: sql<null>`null`,
        lease_until: sql<null>`null`,
      })
      .where('id', '=', p.id)
      .where('lease_token', '=', p.token)
      .returning('id'),
);

/**
 * Ends a lease with a new status; false when the lease was lost (another worker took over).
 * Every delivery ends here, so a prepared query.
 */
export async function settle(
  tx: Tx,
  id: string,
  token: string,
  changes: {
    status: MessageStatus;
    updated_at: string;
    available_at?: string;
    failure_reason?: string | null;
  },
): Promise<boolean> {
  const { available_at = null, failure_reason = null } = changes;
  const rows = await settleQuery(tx, { ...changes, id, token, available_at, failure_reason });
  return rows.length === 1;
}

/** A delivered message to settle as `sent`, and its `message.sent` event. */
export interface SentMessage {
  id: string;
  event: NewEventRow;
}

/**
 * PostgreSQL: the settle, the events of the messages it settled and their fan-out in one
 * statement, so a worker's batch costs one statement and no round trip between its steps.
 */
const settleSentPostgres = preparedWrite(
  (
    tx: Tx,
    p: {
      token: string;
      at: string;
      ids: string[];
      accounts: string[];
      eventIds: string[];
      types: string[];
      resources: string[];
      data: string[];
      createdAt: string[];
    },
  ) => ({
    compile: () =>
      sql<{ id: string }>`with settled as (
          update messages
          set status = 'sent', updated_at = ${p.at}::timestamptz, lease_token = null,
            lease_until = null
          where lease_token = ${p.token}::text and id = any(${p.ids}::text[])
          returning id
        ), event as (
          insert into events (${EVENT_COLUMNS})
          select v.account_id, v.id, v.type, v.resource, v.data, v.created_at
          from unnest(${p.ids}::text[], ${p.accounts}::text[], ${p.eventIds}::text[],
            ${p.types}::text[], ${p.resources}::text[], ${p.data}::text[],
            ${p.createdAt}::timestamptz[])
            as v (message_id, account_id, id, type, resource, data, created_at)
          where v.message_id in (select id from settled)
          returning ${FANNED_COLUMNS}
        ), fanned as (
          insert into webhook_deliveries (${DELIVERY_COLUMNS})
          ${fanOutOf(sql`event`)}
        )
        select id from settled`.compile(tx),
  }),
);

/**
 * Ends the leases of delivered messages as `sent`, and writes each settled message's event:
 * the worker settles its whole claim at once. Returns the ids it settled: a message whose
 * lease another worker took over is not among them, and gets no event.
 */
export async function settleSent(
  tx: Tx,
  sent: readonly SentMessage[],
  token: string,
  at: string,
): Promise<Set<string>> {
  if (isPostgres(tx)) {
    const rows = await settleSentPostgres(tx, {
      token,
      at,
      ids: sent.map((m) => m.id),
      accounts: sent.map((m) => m.event.account_id),
      eventIds: sent.map((m) => m.event.id),
      types: sent.map((m) => m.event.type),
      resources: sent.map((m) => m.event.resource),
      data: sent.map((m) => m.event.data),
      createdAt: sent.map((m) => m.event.created_at),
    });
    return new Set(rows.map((row) => row.id));
  }
  const rows = await tx
    .updateTable('messages')
    .set({ status: 'sent', updated_at: at, lease_token: null, lease_until: null })
    .where('lease_token', '=', token)
    .where(
      'id',
      'in',
      sent.map((m) => m.id),
    )
    .returning('id')
    .execute();
  const settled = new Set(rows.map((row) => row.id));
  for (const m of sent) if (settled.has(m.id)) await insertEvent(tx, m.event);
  return settled;
}

/** Queued messages overdue by `before`, and expired leases: what a lost enqueue left behind. */
export function findStranded(db: ReadDb, before: string, limit: number): Promise<MessageRow[]> {
  return db
    .selectFrom('messages')
    .selectAll()
    .where(claimableAt(before))
    .orderBy('available_at')
    .limit(limit)
    .execute();
}

/** Messages accepted and not yet settled: the queue's depth, on the status index. */
export async function countUnsettled(db: ReadDb): Promise<number> {
  const row = await db
    .selectFrom('messages')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('status', 'in', ['queued', 'processing'])
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** When the longest-waiting queued message fell due (null: none waits). */
export async function oldestQueued(db: ReadDb, now: string): Promise<Date | null> {
  const row = await db
    .selectFrom('messages')
    .select((eb) => eb.fn.min('available_at').as('oldest'))
    .where('status', '=', 'queued')
    .where('available_at', '<=', now)
    .executeTakeFirst();
  return row?.oldest ? new Date(row.oldest as string | Date) : null;
}
