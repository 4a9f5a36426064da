import { type ExpressionBuilder, type Insertable, type SelectQueryBuilder, sql } from 'kysely';
import type { Database, Db } from './database.js';
import { preparedQuery } from './prepared.js';
import type { MessageRow, MessagesTable, Tables } from './tables.js';

// Parameters: the columns in the order written here.
const insertMessageQuery = preparedQuery((db) =>
  db.insertInto('messages').values({
    id: '',
    account_id: '',
    message: '',
    status: '',
    attempts: 0,
    available_at: '',
    lease_token: null,
    lease_until: null,
    failure_reason: null,
    created_at: '',
    updated_at: '',
  }),
);

/** A new message row (the hot path of POST /messages, so a prepared query). */
export async function insertMessage(db: Db, row: Insertable<MessagesTable>): Promise<void> {
  await insertMessageQuery(db, [
    row.id,
    row.account_id,
    row.message,
    row.status,
    row.attempts,
    row.available_at,
    row.lease_token ?? null,
    row.lease_until ?? null,
    row.failure_reason ?? null,
    row.created_at,
    row.updated_at,
  ]);
}

export function findMessage(
  db: Db,
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

/** Due and queued, or processing under a lease that has run out. */
function claimableAt(at: string) {
  return (eb: ExpressionBuilder<Tables, 'messages'>) =>
    eb.or([
      eb.and([eb('status', '=', 'queued'), eb('available_at', '<=', at)]),
      eb.and([eb('status', '=', 'processing'), eb('lease_until', '<', at)]),
    ]);
}

export interface Lease {
  token: string;
  now: string;
  until: string;
}

/** The columns a claim sets: processing, one more attempt, under the new lease. */
function underLease(lease: Lease) {
  return (eb: ExpressionBuilder<Tables, 'messages'>) => ({
    status: 'processing',
    attempts: eb('attempts', '+', 1),
    lease_token: lease.token,
    lease_until: lease.until,
    updated_at: lease.now,
  });
}

/**
 * Takes up to `limit` claimable messages under a new lease: first processing ones whose lease
 * ran out, then due queued ones, oldest first. Each is one statement whose inner select is a
 * range of the (status, available_at) index that stops at the limit; a single `or` of both
 * would read every due row to sort them, and a backlog would slow every claim. On PostgreSQL,
 * `FOR UPDATE SKIP LOCKED` lets several workers claim side by side without waiting or taking
 * the same rows; SQLite runs one writer at a time, so each statement is atomic there as it is.
 */
export async function claimDue(
  db: Db,
  dialect: Database['dialect'],
  lease: Lease,
  limit: number,
): Promise<MessageRow[]> {
  const both = async (tx: Db) => {
    const ids = tx.selectFrom('messages').select('id');
    const claim = (pick: SelectQueryBuilder<Tables, 'messages', { id: string }>, take: number) =>
      tx
        .updateTable('messages')
        .set(underLease(lease))
        .where(
          'id',
          'in',
          pick.limit(take).$if(dialect === 'postgres', (q) => q.forUpdate().skipLocked()),
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
  };
  // One transaction for both, so a failure cannot leave rows leased to nobody: the caller's
  // (Database.write's group commit, a savepoint of its own).
  return both(db);
}

/** Claims one message by id, if it is claimable (the BullMQ path). */
export function claimOne(db: Db, id: string, lease: Lease): Promise<MessageRow | undefined> {
  return db
    .updateTable('messages')
    .set(underLease(lease))
    .where('id', '=', id)
    .where(claimableAt(lease.now))
    .returningAll()
    .executeTakeFirst();
}

// Parameters: [status, updated_at, available_at (null keeps it), failure_reason, id, token].
const settleQuery = preparedQuery((db) =>
  db
    .updateTable('messages')
    .set({
      status: '',
      updated_at: '',
      available_at: sql<string>`coalesce(${''}, available_at)`,
      failure_reason: '',
      lease_token: sql<null>`null`,
      lease_until: sql<null>`null`,
    })
    .where('id', '=', '')
    .where('lease_token', '=', '')
    .returning('id'),
);

/**
 * Ends a lease with a new status; false when the lease was lost (another worker took over).
 * Every delivery ends here, so a prepared query.
 */
export async function settle(
  db: Db,
  id: string,
  token: string,
  changes: {
    status: string;
    updated_at: string;
    available_at?: string;
    failure_reason?: string | null;
  },
): Promise<boolean> {
  const rows = await settleQuery(db, [
    changes.status,
    changes.updated_at,
    changes.available_at ?? null,
    changes.failure_reason ?? null,
    id,
    token,
  ]);
  return rows.length === 1;
}

/**
 * Ends the leases of delivered messages as `sent`, in one statement (the worker settles its
 * whole claim at once). Returns the ids it settled: a message whose lease another worker took
 * over is not among them.
 */
export async function settleSent(
  db: Db,
  ids: string[],
  token: string,
  at: string,
): Promise<Set<string>> {
  const rows = await db
    .updateTable('messages')
    .set({ status: 'sent', updated_at: at, lease_token: null, lease_until: null })
    .where('lease_token', '=', token)
    .where('id', 'in', ids)
    .returning('id')
    .execute();
  return new Set(rows.map((row) => row.id));
}

/** Queued messages overdue by `before`, and expired leases: what a lost enqueue left behind. */
export function findStranded(db: Db, before: string, limit: number): Promise<MessageRow[]> {
  return db
    .selectFrom('messages')
    .selectAll()
    .where(claimableAt(before))
    .orderBy('available_at')
    .limit(limit)
    .execute();
}

/** Messages accepted and not yet settled: the queue's depth, on the status index. */
export async function countUnsettled(db: Db): Promise<number> {
  const row = await db
    .selectFrom('messages')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('status', 'in', ['queued', 'processing'])
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}
