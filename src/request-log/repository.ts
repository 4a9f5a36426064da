import { sql } from 'kysely';
import { deleteBatch, type Rows } from '../store/batch-delete.js';
import { isPostgres, type ReadDb, type Tx } from '../store/handles.js';
import { preparedWrite } from '../store/prepared.js';
import type { NewRequestLogSegment, RequestLogHoursTable } from '../store/tables.js';

/** An account's requests in one hour, by status class, as one writer counted them. */
export type HourCounts = Omit<RequestLogHoursTable, 'hour'> & { hour: string };

/** Every column of a segment as inserted, with its PostgreSQL type (for `unnest`). */
const SEGMENT_TYPES: Record<keyof NewRequestLogSegment, string> = {
  account_id: 'text',
  size: 'int',
  errors: 'int',
  first_at: 'timestamptz',
  last_at: 'timestamptz',
  ids: 'text',
  entries: 'text',
  bodies: 'text',
};
const COLUMNS = Object.keys(SEGMENT_TYPES) as Array<keyof NewRequestLogSegment>;

const HOUR_TYPES: Record<keyof HourCounts, string> = {
  account_id: 'text',
  hour: 'timestamptz',
  writer: 'text',
  s2xx: 'int',
  s4xx: 'int',
  s5xx: 'int',
  s429: 'int',
};
const HOUR_COLUMNS = Object.keys(HOUR_TYPES) as Array<keyof HourCounts>;

const names = (columns: readonly string[]) => sql.raw(columns.join(', '));

/**
 * A segment's `ids`: its entries' request ids in ID_BUCKETS parts by a hash of the id
 * (`idBucket`), so that a lookup searches one part, a sixteenth of them. The text starts with
 * where each part ends (ID_BUCKETS numbers of OFFSET_DIGITS digits, counted from the end of this
 * header), then the parts in order, each ` a b c ` (every id between spaces) or empty. Ids are
 * printable ASCII without spaces (`[\w.-]{1,128}`): a byte a character.
 */
export const ID_BUCKETS = 16;
export const OFFSET_DIGITS = 6;
/** The header's length: where the parts start. */
export const IDS_HEADER = ID_BUCKETS * OFFSET_DIGITS;

/** Which part of `ids` a request id is in: FNV-1a of its characters. */
export function idBucket(id: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % ID_BUCKETS;
}

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
 * PostgreSQL each large one, sent as it is, bytes as bytes (decision 0015, "PostgreSQL").
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

/** A segment's entries (or ids, or bodies) as text, however they are held: text, or its UTF-8
 * bytes. */
export function entriesText(entries: string | Uint8Array): string {
  return typeof entries === 'string' ? entries : bytesView(entries).toString('utf8');
}

/** A segment's text as a Buffer: a view of its bytes, or a string's UTF-8. */
const bytesView = (text: string | Uint8Array): Buffer =>
  typeof text === 'string'
    ? Buffer.from(text)
    : Buffer.from(text.buffer, text.byteOffset, text.byteLength);

/** A segment's texts as PostgreSQL's text columns take them in an array parameter. */
const asText = (segment: NewRequestLogSegment): NewRequestLogSegment => ({
  ...segment,
  ids: entriesText(segment.ids),
  entries: entriesText(segment.entries),
  bodies: segment.bodies === null ? null : entriesText(segment.bodies),
});

/** The bytes a segment's texts take. */
const bytesOf = (segment: NewRequestLogSegment) =>
  segment.ids.length + segment.entries.length + (segment.bodies?.length ?? 0);

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
  if (isPostgres(tx)) {
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
      if (bytesOf(segment) <= LARGE_SEGMENT) {
        // PostgreSQL's columns are text: bytes in an array would be sent as bytea.
        small.push(asText(segment));
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
  /** The bytes of its entries, read or not (the store tests the text of those it does not
   * answer). */
  bytes: number;
  /** Its entries (text, or UTF-8 bytes: `entriesText`); null when the filter rules out every
   * one of them. Never their bodies (`bodies`), which only a lookup by id reads. */
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

/** The account's segments whose newest entry is since `since`. */
const accountSegments = (db: ReadDb, accountId: string, since: string) =>
  db
    .selectFrom('request_log_segments')
    .where('account_id', '=', accountId)
    .where('last_at', '>=', since);

/**
 * What a text is searched for: on SQLite as bytes, since the texts are stored as bytes (a BLOB
 * searched for a string would be made a string first); on PostgreSQL as text.
 */
const needle = (db: ReadDb, text: string): string | Buffer =>
  isPostgres(db) ? text : Buffer.from(text);

/**
 * An account's segments, newest first. Every segment of the range is answered, with its size
 * and its bytes, so that a reader can count the entries and the bytes it passes; the text of
 * those the filter rules out is not (its test runs in the store, where the text is).
 */
export async function readSegments(
  db: ReadDb,
  accountId: string,
  filter: SegmentFilter,
): Promise<SegmentRead[]> {
  const find = isPostgres(db) ? 'strpos' : 'instr';
  const { withErrors, withSuccesses, containing = [] } = filter;
  const rows = await accountSegments(db, accountId, filter.since)
    .select(['seq', 'size', 'first_at'])
    .select((eb) => eb.fn<number>('octet_length', ['entries']).as('bytes'))
    .select((eb) => {
      const tests = [
        ...(withErrors ? [eb('errors', '>', 0)] : []),
        ...(withSuccesses ? [eb('errors', '<', eb.ref('size'))] : []),
        ...containing.map((text) => eb(eb.fn(find, ['entries', eb.val(needle(db, text))]), '>', 0)),
      ];
      return tests.length === 0
        ? eb.ref('entries').as('entries')
        : eb.case().when(eb.and(tests)).then(eb.ref('entries')).else(null).end().as('entries');
    })
    .$if(filter.atOrBefore !== undefined, (q) => q.where('seq', '<=', filter.atOrBefore ?? 0))
    .orderBy('seq', 'desc')
    .limit(filter.take)
    .execute();
  return rows.map((row) => ({
    seq: Number(row.seq),
    size: Number(row.size),
    firstAt: row.first_at,
    bytes: Number(row.bytes),
    entries: row.entries ?? null,
  }));
}

/** A segment found: its entries (not their bodies: `bodiesLine`). */
export interface SegmentFound {
  seq: number;
  firstAt: Date | string;
  entries: string | Uint8Array;
}

/**
 * The account's newest segment since `since` whose ids hold `id` (a request id, which has no
 * space), read whole; undefined without one. The store searches the one part of its ids that
 * the id would be in, a sixteenth of them.
 */
export async function segmentHolding(
  db: ReadDb,
  accountId: string,
  since: string,
  id: string,
): Promise<SegmentFound | undefined> {
  const sought = needle(db, ` ${id} `);
  const bucket = idBucket(id);
  // The part's bounds, in characters after the header (ids are ASCII: characters are bytes):
  // the header's numbers, where the part before it ends (the first starts at once) and where
  // it ends.
  const bound = (part: number) =>
    sql<number>`cast(substr(ids, ${part * OFFSET_DIGITS + 1}, ${OFFSET_DIGITS}) as integer)`;
  const start = bucket === 0 ? sql<number>`0` : bound(bucket - 1);
  // SQLite searches the one part; PostgreSQL the whole text, fetched once (decision 0065).
  const search = isPostgres(db)
    ? sql<number>`strpos(ids, ${sought})`
    : sql<number>`instr(substr(ids, ${IDS_HEADER + 1} + ${start}, ${bound(bucket)} - ${start}), ${sought})`;
  const row = await accountSegments(db, accountId, since)
    .select(['seq', 'first_at', 'entries'])
    .where(search, '>', 0)
    .orderBy('seq', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row && { seq: Number(row.seq), firstAt: row.first_at, entries: row.entries };
}

/** The most bytes a line of `bodies` takes: two texts of 4 KB, each character escaped. */
const MOST_LINE_BYTES = 64 * 1024;

/**
 * The line of segment `seq`'s bodies for its entry at `place` (`[place, …]`, JSON text); null
 * without one, or in a segment whose entries hold their bodies. PostgreSQL finds it and sends
 * that line alone; SQLite hands the bodies over as they are stored (no copy but this one), and
 * they are searched here, faster than its instr would.
 */
export async function bodiesLine(db: ReadDb, seq: number, place: number): Promise<string | null> {
  const start = `\n[${place},`;
  if (isPostgres(db)) {
    // Searched once (`offset 0` keeps the subquery whole: inlined, each use of `at` would fetch
    // the bodies again).
    const { rows } = await sql<{
      line: string;
    }>`select substr(bodies, at + 1, ${MOST_LINE_BYTES}) as line
      from (select bodies, strpos(bodies, ${start}) as at from request_log_segments
        where seq = ${seq} offset 0) found
      where at > 0`.execute(db);
    const line = rows[0]?.line;
    return line === undefined ? null : (line.split('\n', 1)[0] ?? null);
  }
  const row = await db
    .selectFrom('request_log_segments')
    .select('bodies')
    .where('seq', '=', seq)
    .executeTakeFirst();
  if (!row?.bodies) return null;
  const bytes = bytesView(row.bodies);
  const at = bytes.indexOf(start);
  if (at < 0) return null;
  const end = bytes.indexOf(0x0a, at + 1);
  return bytes.toString('utf8', at + 1, end < 0 ? bytes.length : end);
}

/** How many entries the account's segments since `since` written after segment `seq` hold. */
export async function entriesAfter(
  db: ReadDb,
  accountId: string,
  since: string,
  seq: number,
): Promise<number> {
  const row = await accountSegments(db, accountId, since)
    .select((eb) => eb.fn.sum<number>('size').as('entries'))
    .where('seq', '>', seq)
    .executeTakeFirst();
  return Number(row?.entries ?? 0);
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
export function deleteOldRequestHours(tx: Tx, before: string, limit: number): Promise<number> {
  const old = (rows: Rows<'request_log_hours'>) => rows.where('hour', '<', before);
  return deleteBatch(tx, 'request_log_hours', ['account_id', 'hour', 'writer'], old, limit);
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
  // Each account over its cap read through its own index entries: a join would let
  // PostgreSQL's planner, which guesses a third of the accounts over, read the whole table
  // (SQLite, which has no LATERAL, reads each account by the index as it is).
  const ranked = isPostgres(tx)
    ? sql`select s.seq, s.size, s.through from over o cross join lateral (
        select seq, size, sum(size) over (order by seq desc) as through
        from request_log_segments where account_id = o.account_id
      ) s`
    : sql`select s.seq, s.size,
        sum(s.size) over (partition by s.account_id order by s.seq desc) as through
      from request_log_segments s join over o on o.account_id = s.account_id`;
  const result = await sql`with over as (
      select account_id from request_log_hours
      where hour >= ${since}
      group by account_id
      having sum(s2xx + s4xx + s5xx + s429) > ${keep}
    ), ranked as materialized (${ranked})
    delete from request_log_segments where seq in (
      select seq from ranked where through - size >= ${keep} order by seq limit ${limit}
    )`.execute(tx);
  return Number(result.numAffectedRows ?? 0);
}
