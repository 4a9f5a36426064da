import { PostgresAdapter, sql } from 'kysely';
import type { ReadDb, Tx } from './handles.js';
import { preparedWrite } from './prepared.js';
import type { NewRequestLogRow, RequestLogHoursTable, RequestLogRow } from './tables.js';

/** An account's requests in one hour, by status class, as one writer counted them. */
export type HourCounts = Omit<RequestLogHoursTable, 'hour'> & { hour: string };

/** A request log entry as listed: every column but the bodies. */
export type RequestLogListRow = Omit<RequestLogRow, 'request_body' | 'error_body'>;

/** Every column of an entry as inserted. */
const COLUMNS = [
  'account_id',
  'id',
  'key_id',
  'method',
  'route',
  'path',
  'status',
  'duration_ms',
  'error_code',
  'idempotency_key',
  'replayed',
  'client',
  'request_body',
  'request_body_truncated',
  'error_body',
  'created_at',
] as const satisfies ReadonlyArray<keyof NewRequestLogRow>;

/** Their PostgreSQL types, for `unnest`. */
const ENTRY_TYPES: Record<(typeof COLUMNS)[number], string> = {
  account_id: 'text',
  id: 'text',
  key_id: 'text',
  method: 'text',
  route: 'text',
  path: 'text',
  status: 'int',
  duration_ms: 'float8',
  error_code: 'text',
  idempotency_key: 'text',
  replayed: 'int',
  client: 'text',
  request_body: 'text',
  request_body_truncated: 'int',
  error_body: 'text',
  created_at: 'timestamptz',
};

const HOUR_COLUMNS = ['account_id', 'hour', 'writer', 's2xx', 's4xx', 's5xx', 's429'] as const;
const HOUR_TYPES: Record<(typeof HOUR_COLUMNS)[number], string> = {
  account_id: 'text',
  hour: 'timestamptz',
  writer: 'text',
  s2xx: 'int',
  s4xx: 'int',
  s5xx: 'int',
  s429: 'int',
};

const LISTED = [
  'seq',
  ...COLUMNS.filter((name) => name !== 'request_body' && name !== 'error_body'),
] as const;

const names = (columns: readonly string[]) => sql.raw(columns.join(', '));

const ADD_COUNTS = sql.raw(
  `on conflict (account_id, hour, writer) do update set ${HOUR_COLUMNS.slice(3)
    .map((name) => `${name} = request_log_hours.${name} + excluded.${name}`)
    .join(', ')}`,
);

/**
 * PostgreSQL: a batch's rows in one statement, whatever their number, one array parameter per
 * column (`unnest`): one round trip, planned once (a prepared write).
 */
type Arrays = Record<`c${number}`, unknown[]>;
const unnested = (columns: readonly string[], types: Record<string, string>, p: Arrays) =>
  sql`select ${names(columns)} from unnest(${sql.join(
    columns.map((name, i) => sql`${p[`c${i}`]}::${sql.raw(types[name] ?? 'text')}[]`),
  )}) as batch (${names(columns)})`;

const insertEntriesPostgres = preparedWrite((tx: Tx, p: Arrays) => ({
  compile: () =>
    sql`insert into request_log (${names(COLUMNS)}) ${unnested(COLUMNS, ENTRY_TYPES, p)}`.compile(
      tx,
    ),
}));
const addHoursPostgres = preparedWrite((tx: Tx, p: Arrays) => ({
  compile: () =>
    sql`insert into request_log_hours (${names(HOUR_COLUMNS)})
      ${unnested(HOUR_COLUMNS, HOUR_TYPES, p)} ${ADD_COUNTS}`.compile(tx),
}));

/**
 * SQLite: a prepared statement a row, run on the batch's connection directly (no round trip
 * to save): of one statement a row, one of 500 rows and one reading a JSON array of them
 * (json_each), the first cost the least.
 */
const insertEntrySqlite = preparedWrite((tx: Tx, p: NewRequestLogRow) => ({
  compile: () =>
    sql`insert into request_log (${names(COLUMNS)})
      values (${sql.join(COLUMNS.map((name) => p[name]))})`.compile(tx),
}));
const addHourSqlite = preparedWrite((tx: Tx, p: HourCounts) => ({
  compile: () =>
    sql`insert into request_log_hours (${names(HOUR_COLUMNS)})
      values (${sql.join(HOUR_COLUMNS.map((name) => p[name]))}) ${ADD_COUNTS}`.compile(tx),
}));

/** One array per column, as `unnest` takes them. */
function byColumn<R>(rows: readonly R[], columns: ReadonlyArray<keyof R>): Arrays {
  const arrays: Arrays = {};
  columns.forEach((name, i) => {
    arrays[`c${i}`] = rows.map((row) => row[name]);
  });
  return arrays;
}

/**
 * Writes a batch of entries and adds their counts to the hours, in the write's transaction.
 * The hours have one row per account, hour and writer (PostgreSQL refuses an upsert that
 * meets a row twice).
 */
export async function insertRequestLog(
  tx: Tx,
  entries: readonly NewRequestLogRow[],
  hours: readonly HourCounts[],
): Promise<void> {
  if (entries.length === 0) return;
  if (tx.getExecutor().adapter instanceof PostgresAdapter) {
    await Promise.all([
      insertEntriesPostgres(tx, byColumn(entries, COLUMNS)),
      addHoursPostgres(tx, byColumn(hours, HOUR_COLUMNS)),
    ]);
    return;
  }
  for (const entry of entries) await insertEntrySqlite(tx, entry);
  for (const counts of hours) await addHourSqlite(tx, counts);
}

export interface RequestLogFilter {
  /** The oldest entry listed (7 days back). */
  since: string;
  /** One status (404–404), or a class (400–499). */
  status?: { from: number; to: number } | undefined;
  keyId?: string | undefined;
  method?: string | undefined;
  path?: string | undefined;
  /** The last entry of the page before: this page starts after it. */
  beforeSeq?: number | undefined;
  take: number;
}

/** A keyset page of an account's entries, newest first. */
export function listRequestLog(
  db: ReadDb,
  accountId: string,
  filter: RequestLogFilter,
): Promise<RequestLogListRow[]> {
  const { status, keyId, method, path, beforeSeq } = filter;
  return db
    .selectFrom('request_log')
    .select(LISTED)
    .where('account_id', '=', accountId)
    .where('created_at', '>=', filter.since)
    .$if(status !== undefined, (q) =>
      q
        .where('status', '>=', status?.from ?? 0)
        .where('status', '<=', status?.to ?? 0)
        // As the errors' index is written (SQLite's planner proves nothing of a parameter).
        .$if((status?.from ?? 0) >= 400, (q) => q.where(sql<boolean>`status >= 400`)),
    )
    .$if(keyId !== undefined, (q) => q.where('key_id', '=', keyId ?? ''))
    .$if(method !== undefined, (q) => q.where('method', '=', method ?? ''))
    .$if(path !== undefined, (q) => q.where('path', '=', path ?? ''))
    .$if(beforeSeq !== undefined, (q) => q.where('seq', '<', beforeSeq ?? 0))
    .orderBy('seq', 'desc')
    .limit(filter.take)
    .execute();
}

/** The account's newest entry of this id since `since` (a client may send an id twice). */
export function findRequestLog(
  db: ReadDb,
  accountId: string,
  id: string,
  since: string,
): Promise<RequestLogRow | undefined> {
  return db
    .selectFrom('request_log')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .where('created_at', '>=', since)
    .orderBy('seq', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** An account's counts per hour since `from`, every writer's added up. */
export function hourCounts(
  db: ReadDb,
  accountId: string,
  from: string,
): Promise<Array<{ hour: Date | string; s2xx: number; s4xx: number; s5xx: number; s429: number }>> {
  return db
    .selectFrom('request_log_hours')
    .select((eb) => [
      'hour',
      eb.fn.sum<number>('s2xx').as('s2xx'),
      eb.fn.sum<number>('s4xx').as('s4xx'),
      eb.fn.sum<number>('s5xx').as('s5xx'),
      eb.fn.sum<number>('s429').as('s429'),
    ])
    .where('account_id', '=', accountId)
    .where('hour', '>=', from)
    .groupBy('hour')
    .execute();
}

/**
 * Deletes those of the oldest `limit` entries (by the order written, which is the order made
 * to within a batch) made before `before`; how many it deleted. No index by time is kept for
 * this alone.
 */
export async function deleteOldRequestLog(tx: Tx, before: string, limit: number): Promise<number> {
  const result = await tx
    .deleteFrom('request_log')
    .where('seq', 'in', (eb) =>
      eb.selectFrom('request_log').select('seq').orderBy('seq').limit(limit),
    )
    .where('created_at', '<', before)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Deletes up to `limit` hours' counts of hours before `before`; how many it deleted. */
export async function deleteOldRequestHours(
  tx: Tx,
  before: string,
  limit: number,
): Promise<number> {
  const result = await tx
    .deleteFrom('request_log_hours')
    .where((eb) =>
      eb(
        eb.refTuple('account_id', 'hour', 'writer'),
        'in',
        eb
          .selectFrom('request_log_hours')
          .select(['account_id', 'hour', 'writer'])
          .where('hour', '<', before)
          .limit(limit)
          .$asTuple('account_id', 'hour', 'writer'),
      ),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Deletes up to `limit` entries of accounts past their newest `keep`; how many it deleted.
 * Only the accounts whose hours since `since` count more than `keep` requests are looked at
 * (the counts are never fewer than the entries), each by walking its newest `keep` entries to
 * the edge once (materialized: PostgreSQL could otherwise walk it again for every row joined).
 */
export async function deleteRequestLogOverCap(
  tx: Tx,
  since: string,
  keep: number,
  limit: number,
): Promise<number> {
  const result = await sql`with over as (
      select account_id from request_log_hours
      where hour >= ${since}
      group by account_id
      having sum(s2xx + s4xx + s5xx + s429) > ${keep}
    ), edges as materialized (
      select o.account_id, (select x.seq from request_log x where x.account_id = o.account_id
        order by x.seq desc limit 1 offset ${keep}) as seq
      from over o
    )
    delete from request_log where seq in (
      select l.seq from edges e
      join request_log l on l.account_id = e.account_id and l.seq <= e.seq
      limit ${limit}
    )`.execute(tx);
  return Number(result.numAffectedRows ?? 0);
}
