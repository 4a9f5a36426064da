import { PostgresAdapter, sql } from 'kysely';
import type { ReadDb, Tx } from './handles.js';
import { preparedWrite } from './prepared.js';
import type { NewRequestLogSegment, RequestLogHoursTable } from './tables.js';

/** An account's requests in one hour, by status class, as one writer counted them. */
export type HourCounts = Omit<RequestLogHoursTable, 'hour'> & { hour: string };

/** Every column of a segment as inserted. */
const COLUMNS = [
  'account_id',
  'size',
  'errors',
  'first_at',
  'last_at',
  'entries',
] as const satisfies ReadonlyArray<keyof NewRequestLogSegment>;

/** Their PostgreSQL types, for `unnest`. */
const SEGMENT_TYPES: Record<(typeof COLUMNS)[number], string> = {
  account_id: 'text',
  size: 'int',
  errors: 'int',
  first_at: 'timestamptz',
  last_at: 'timestamptz',
  entries: 'text',
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

const names = (columns: readonly string[]) => sql.raw(columns.join(', '));

const ADD_COUNTS = sql.raw(
  `on conflict (account_id, hour, writer) do update set ${HOUR_COLUMNS.slice(3)
    .map((name) => `${name} = request_log_hours.${name} + excluded.${name}`)
    .join(', ')}`,
);

/**
 * PostgreSQL: a batch's rows in one statement, whatever their number, one array parameter per
 * column (`unnest`): one round trip, planned once (a prepared write). Segments larger than
 * this many bytes (or characters, held as text) go in a statement each (`insertSegment`).
 */
const LARGE_SEGMENT = 8 * 1024;
type Arrays = Record<`c${number}`, unknown[]>;
const unnested = (columns: readonly string[], types: Record<string, string>, p: Arrays) =>
  sql`select ${names(columns)} from unnest(${sql.join(
    columns.map((name, i) => sql`${p[`c${i}`]}::${sql.raw(types[name] ?? 'text')}[]`),
  )}) as batch (${names(columns)})`;

const insertSegmentsPostgres = preparedWrite((tx: Tx, p: Arrays) => ({
  compile: () =>
    sql`insert into request_log_segments (${names(COLUMNS)})
      ${unnested(COLUMNS, SEGMENT_TYPES, p)}`.compile(tx),
}));
const addHoursPostgres = preparedWrite((tx: Tx, p: Arrays) => ({
  compile: () =>
    sql`insert into request_log_hours (${names(HOUR_COLUMNS)})
      ${unnested(HOUR_COLUMNS, HOUR_TYPES, p)} ${ADD_COUNTS}`.compile(tx),
}));

/**
 * A segment a statement: on SQLite each segment (run on the batch's connection directly), on
 * PostgreSQL each large one. A text in an array parameter is escaped by the client (a `\` before
 * each of its thousands of `"`) and parsed back by the server; a parameter of its own is sent
 * as it is, bytes as bytes.
 */
const insertSegment = preparedWrite((tx: Tx, p: NewRequestLogSegment) => ({
  compile: () =>
    sql`insert into request_log_segments (${names(COLUMNS)})
      values (${sql.join(COLUMNS.map((name) => p[name]))})`.compile(tx),
}));
const addHourSqlite = preparedWrite((tx: Tx, p: HourCounts) => ({
  compile: () =>
    sql`insert into request_log_hours (${names(HOUR_COLUMNS)})
      values (${sql.join(HOUR_COLUMNS.map((name) => p[name]))}) ${ADD_COUNTS}`.compile(tx),
}));

/** A segment's entries as text, however they are held: text, or its UTF-8 bytes. */
export function entriesText(entries: string | Uint8Array): string {
  return typeof entries === 'string'
    ? entries
    : Buffer.from(entries.buffer, entries.byteOffset, entries.byteLength).toString('utf8');
}

/** One array per column, as `unnest` takes them. */
function byColumn<R>(rows: readonly R[], columns: ReadonlyArray<keyof R>): Arrays {
  const arrays: Arrays = {};
  columns.forEach((name, i) => {
    arrays[`c${i}`] = rows.map((row) => row[name]);
  });
  return arrays;
}

/**
 * Writes a batch's segments (one per account) and adds their counts to the hours, in the
 * write's transaction. The hours have one row per account, hour and writer (PostgreSQL refuses
 * an upsert that meets a row twice).
 */
export async function insertRequestLog(
  tx: Tx,
  segments: readonly NewRequestLogSegment[],
  hours: readonly HourCounts[],
): Promise<void> {
  if (segments.length === 0) return;
  if (tx.getExecutor().adapter instanceof PostgresAdapter) {
    // Pipelined: one round trip, whatever the number of statements. In the segments' order: a
    // segment's `seq` is the order reads and the cap take an account's entries in, so a small
    // segment of newer entries must not be inserted before a large one of older entries.
    const statements: Array<Promise<unknown>> = [];
    let small: NewRequestLogSegment[] = [];
    const insertSmall = () => {
      if (small.length > 0) statements.push(insertSegmentsPostgres(tx, byColumn(small, COLUMNS)));
      small = [];
    };
    for (const segment of segments) {
      if (segment.entries.length <= LARGE_SEGMENT) {
        // PostgreSQL's column is text: bytes in an array would be sent as bytea.
        small.push({ ...segment, entries: entriesText(segment.entries) });
        continue;
      }
      insertSmall();
      // A parameter of its own: bytes are sent as they are (binary format, which PostgreSQL
      // reads for a text as its bytes in the client's encoding, UTF-8), no string made of them
      // (a large one would count against V8's old generation).
      statements.push(insertSegment(tx, segment));
    }
    insertSmall();
    statements.push(addHoursPostgres(tx, byColumn(hours, HOUR_COLUMNS)));
    await Promise.all(statements);
    return;
  }
  for (const segment of segments) await insertSegment(tx, segment);
  for (const counts of hours) await addHourSqlite(tx, counts);
}

/** A segment as read: its entries only where they may hold what is looked for. */
export interface SegmentRead {
  seq: number;
  size: number;
  firstAt: Date | string;
  /** Its entries (text, or UTF-8 bytes: `entriesText`); null when the filter rules out every
   * one of them. */
  entries: string | Uint8Array | null;
}

/** Which segments may hold what a read looks for; the entries are then checked one by one. */
export interface SegmentFilter {
  /** Only segments written since (their newest entry): 7 days back. */
  since: string;
  /** Only this segment and those written before it. */
  atOrBefore?: number | undefined;
  /** Only those holding an entry answered 4xx or 5xx… */
  withErrors?: boolean | undefined;
  /** …or one answered otherwise. */
  withSuccesses?: boolean | undefined;
  /** Only those whose text holds each of these (JSON-encoded values: `"key_…"`). */
  containing?: readonly string[] | undefined;
  take: number;
}

/**
 * An account's segments, newest first. Every segment of the range is answered, with its size,
 * so that a reader can count the entries it passes; the text of those the filter rules out is
 * not (its test runs in the store, where the text is).
 */
export async function readSegments(
  db: ReadDb,
  accountId: string,
  filter: SegmentFilter,
): Promise<SegmentRead[]> {
  const find = db.getExecutor().adapter instanceof PostgresAdapter ? 'strpos' : 'instr';
  const { withErrors, withSuccesses, containing = [] } = filter;
  const rows = await db
    .selectFrom('request_log_segments')
    .select(['seq', 'size', 'first_at'])
    .select((eb) => {
      const tests = [
        ...(withErrors ? [eb('errors', '>', 0)] : []),
        ...(withSuccesses ? [eb('errors', '<', eb.ref('size'))] : []),
        ...containing.map((text) => eb(eb.fn(find, ['entries', eb.val(text)]), '>', 0)),
      ];
      return tests.length === 0
        ? eb.ref('entries').as('entries')
        : eb.case().when(eb.and(tests)).then(eb.ref('entries')).else(null).end().as('entries');
    })
    .where('account_id', '=', accountId)
    .where('last_at', '>=', filter.since)
    .$if(filter.atOrBefore !== undefined, (q) => q.where('seq', '<=', filter.atOrBefore ?? 0))
    .orderBy('seq', 'desc')
    .limit(filter.take)
    .execute();
  return rows.map((row) => ({
    seq: Number(row.seq),
    size: Number(row.size),
    firstAt: row.first_at,
    entries: row.entries ?? null,
  }));
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
 * Deletes those of the oldest `limit` segments (by the order written) whose newest entry is
 * older than `before`; how many it deleted. No index by time is kept for this alone.
 */
export async function deleteOldRequestLog(tx: Tx, before: string, limit: number): Promise<number> {
  const result = await tx
    .deleteFrom('request_log_segments')
    .where('seq', 'in', (eb) =>
      eb.selectFrom('request_log_segments').select('seq').orderBy('seq').limit(limit),
    )
    .where('last_at', '<', before)
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
 * Deletes the account's segments whose every entry is past its newest `keep`; how many it
 * deleted. One statement over the account's segments (a window sum of their sizes): the log's
 * writer runs it for an account it has written `keep` entries of, so that an account refused
 * at full speed does not fill the disk between housekeeping's runs.
 */
export async function deleteAccountLogOverCap(
  tx: Tx,
  accountId: string,
  keep: number,
): Promise<number> {
  const result = await sql`with ranked as (
      select seq, size, sum(size) over (order by seq desc) as through
      from request_log_segments where account_id = ${accountId}
    )
    delete from request_log_segments
    where seq in (select seq from ranked where through - size >= ${keep})`.execute(tx);
  return Number(result.numAffectedRows ?? 0);
}

/**
 * Deletes up to `limit` segments of accounts whose every entry is past their newest `keep`;
 * how many it deleted. Only the accounts whose hours since `since` count more than `keep`
 * requests are looked at (the counts are never fewer than the entries). A segment holding the
 * `keep`th newest entry is kept whole: reads show none past it. One statement, deciding on
 * nothing read before it (housekeeping's writes are blind).
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
    ), ranked as materialized (
      select s.seq, s.size,
        sum(s.size) over (partition by s.account_id order by s.seq desc) as through
      from request_log_segments s join over o on o.account_id = s.account_id
    )
    delete from request_log_segments where seq in (
      select seq from ranked where through - size >= ${keep} order by seq limit ${limit}
    )`.execute(tx);
  return Number(result.numAffectedRows ?? 0);
}
