import { KeysetCursor, type Page, type PageRequest, pageSize } from '../domain/pagination.js';
import { fail, ok, type Result } from '../domain/result.js';
import type { ErrorDetail } from '../errors.js';
import type { ReadDb } from '../store/handles.js';
import { toIso } from '../store/tables.js';
import { hourCounts } from './repository.js';
import {
  findEntry,
  type LoggedRequest,
  type LogPosition,
  type LogWalk,
  walkLog,
} from './segments.js';

/**
 * The request log: each account's API requests, as they were answered, for the account to
 * look one up (docs/decisions/0013-request-log.md). Entries are captured when a request is
 * answered and written in batches off the request path (src/request-log/writer.ts), stored as
 * segments (src/request-log/segments.ts); this module holds the rules: what an entry
 * keeps, what is redacted, how long it is kept, and how it is read.
 */
export const HOUR_MS = 60 * 60 * 1000;
/** The start of the hour instant `ms` falls in. */
export const hourOf = (ms: number): number => ms - (ms % HOUR_MS);
/** How far back the log lists, and how long entries are kept… */
export const REQUEST_LOG_KEPT_MS = 7 * 24 * HOUR_MS;
/** …and how many of an account's, at most: whichever is less. */
export const REQUEST_LOG_MAX_ENTRIES = 10_000;
/** The most of a request's body kept, in bytes of UTF-8. */
export const BODY_MAX_BYTES = 4096;
/** What stands for the value of a field named like a secret. */
export const REDACTED = '[redacted]';
/** A field whose name holds one of these (in any case) has its value redacted, whatever it is. */
const SECRET_NAME = /pass|pwd|secret|key|token|auth|credential|cookie|session|bearer|signature/i;

/**
 * What is redacted wherever it stands, in any string (a value, a field's name, a path, an
 * Error): this service's API keys (`as_live_…`, `as_test_…`, `as_pk_…`) and webhook secrets
 * (`whsec_…`), what follows `Bearer `, a portal session's cookie (`as_session=…`, or its signed value alone:
 * two parts of 43 characters), and the user-info of a URL (`https://user:password@host`).
 */
const SECRET_VALUE =
  /\b(?:as_(?:pk_)?(?:live|test)_|whsec_)[A-Za-z0-9]+|(?<=\bbearer\s+)[^\s"',;]+|(?<=\bas_session=)[^\s"',;]+|(?<![\w-])[\w-]{43}\.[\w+/-]{43}(?![\w+/-])|(?<=\b[a-z][a-z\d+.-]*:\/\/)[^\s/?#@"']+(?=@)/gi;
/** What a string holds wherever SECRET_VALUE finds something in it: most strings are passed
 * by this test alone. */
const MAY_HOLD_SECRET =
  /as_(?:pk_)?(?:live|test)_|whsec_|bearer|as_session=|:\/\/[^\s/@]*@|[\w-]{43}\./i;

/** A string with every value shaped like a secret (SECRET_VALUE) replaced by `[redacted]`. */
export function redactSecrets(text: string): string {
  return MAY_HOLD_SECRET.test(text) ? text.replace(SECRET_VALUE, REDACTED) : text;
}

/** What the log's routes answer (404) on a server that keeps none. */
export const REQUEST_LOG_OFF =
  'This server keeps no request log: its operator turned it off (REQUEST_LOG=off). Ask them ' +
  'to turn it on.';

/** The oldest instant whose entries are still kept at `now`. */
export function requestLogKeptSince(now: Date): string {
  return new Date(now.getTime() - REQUEST_LOG_KEPT_MS).toISOString();
}

/** A request body as kept: JSON text, redacted, at most BODY_MAX_BYTES. */
export interface KeptBody {
  text: string;
  /** The text was cut at BODY_MAX_BYTES (on a character boundary: it is no longer JSON). */
  truncated: boolean;
}

/**
 * The JSON text of a request's body with the value of every field named like a secret, at any
 * depth, replaced by `"[redacted]"`, cut at BODY_MAX_BYTES. Written as it is walked and
 * stopped once past the limit, so a large body costs no more than 4 KB of it. Null without a
 * body.
 */
export function keptBody(value: unknown): KeptBody | null {
  if (value === undefined || value === null) return null;
  const out = { text: '' };
  const whole = write(value, out);
  let text = out.text;
  let truncated = !whole;
  if (truncated || text.length * 3 > BODY_MAX_BYTES) {
    const bytes = Buffer.from(text);
    if (bytes.length > BODY_MAX_BYTES) {
      let end = BODY_MAX_BYTES;
      // Back to the first byte of the character the limit falls in.
      while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
      text = bytes.subarray(0, end).toString('utf8');
      truncated = true;
    }
  }
  return { text, truncated };
}

/**
 * Writes a parsed JSON value, redacted, onto `out.text`; false once past BODY_MAX_BYTES
 * characters (so at least as many bytes), where it stops.
 */
function write(value: unknown, out: { text: string }): boolean {
  if (typeof value === 'string') {
    // A long string is cut before it is escaped: past the limit, the rest is not kept anyway.
    out.text += JSON.stringify(
      redactSecrets(value.length > BODY_MAX_BYTES ? value.slice(0, BODY_MAX_BYTES + 1) : value),
    );
  } else if (value === null || typeof value !== 'object') {
    out.text += JSON.stringify(value) ?? 'null';
  } else if (Array.isArray(value)) {
    out.text += '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out.text += ',';
      if (!write(value[i], out)) return false;
    }
    out.text += ']';
  } else {
    out.text += '{';
    let first = true;
    for (const name of Object.keys(value)) {
      const field = (value as Record<string, unknown>)[name];
      if (field === undefined) continue;
      const shown = JSON.stringify(redactSecrets(name));
      out.text += first ? shown : `,${shown}`;
      first = false;
      if (SECRET_NAME.test(name)) out.text += `:"${REDACTED}"`;
      else {
        out.text += ':';
        if (!write(field, out)) return false;
      }
    }
    out.text += '}';
  }
  return out.text.length <= BODY_MAX_BYTES;
}

/**
 * An Error answer as kept: its strings redacted (SECRET_VALUE: an Error may quote what was
 * sent), whole up to BODY_MAX_BYTES (every Error but one with many long details), else without
 * the details that do not fit.
 */
export function keptErrorBody(sent: string): string {
  const text = MAY_HOLD_SECRET.test(sent) ? redactedJson(sent) : sent;
  if (text.length <= BODY_MAX_BYTES / 3 || Buffer.byteLength(text) <= BODY_MAX_BYTES) return text;
  try {
    const error = JSON.parse(text) as { details?: unknown[] };
    const details = Array.isArray(error.details) ? [...error.details] : [];
    let kept = JSON.stringify({ ...error, details });
    while (details.length > 0 && Buffer.byteLength(kept) > BODY_MAX_BYTES) {
      details.pop();
      kept = JSON.stringify({ ...error, details });
    }
    return Buffer.byteLength(kept) <= BODY_MAX_BYTES
      ? kept
      : JSON.stringify({ ...error, details: [], message: '' });
  } catch {
    return '';
  }
}

/** JSON text with every string in it (names too) redacted; '' should it not be JSON. */
function redactedJson(text: string): string {
  try {
    return JSON.stringify(redactedValue(JSON.parse(text))) ?? '';
  } catch {
    return '';
  }
}

function redactedValue(value: unknown): unknown {
  if (typeof value === 'string') return redactSecrets(value);
  if (Array.isArray(value)) return value.map(redactedValue);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, field]) => [redactSecrets(name), redactedValue(field)]),
  );
}

export interface RequestLogEntry {
  id: string;
  method: string;
  route: string | null;
  path: string;
  status: number;
  durationMs: number;
  keyId: string | null;
  errorCode: string | null;
  idempotencyKey: string | null;
  replayed: boolean;
  clientAddress: string | null;
  createdAt: string;
  /** How many requests it stands for: more than 1 for refusals (429) summarised as one. */
  count: number;
  traceId: string | null;
}

/** An Error as answered (src/http/error-handler.ts). */
export interface AnsweredError {
  code: string;
  message: string;
  status: number;
  details?: ErrorDetail[];
}

export interface RequestLogEntryDetail extends RequestLogEntry {
  requestBody: string | null;
  requestBodyTruncated: boolean;
  errorBody: AnsweredError | null;
}

function toEntry(entry: LoggedRequest): RequestLogEntry {
  return {
    id: entry.id,
    method: entry.method,
    route: entry.route,
    path: entry.path,
    status: entry.status,
    durationMs: entry.durationMs,
    keyId: entry.keyId,
    errorCode: entry.errorCode,
    idempotencyKey: entry.idempotencyKey,
    replayed: entry.replayed,
    clientAddress: entry.client,
    createdAt: new Date(entry.at).toISOString(),
    count: entry.count,
    traceId: entry.traceId,
  };
}

/** The Error an entry keeps; null for none, or for a body that is no Error of ours. */
function answeredError(text: string | null): AnsweredError | null {
  if (!text) return null;
  try {
    const body = JSON.parse(text) as Partial<AnsweredError> | null;
    return typeof body?.code === 'string' &&
      typeof body.message === 'string' &&
      typeof body.status === 'number'
      ? (body as AnsweredError)
      : null;
  } catch {
    return null;
  }
}

function toDetail(entry: LoggedRequest): RequestLogEntryDetail {
  return {
    ...toEntry(entry),
    requestBody: entry.requestBody,
    requestBodyTruncated: entry.requestBodyTruncated,
    errorBody: answeredError(entry.errorBody),
  };
}

/**
 * The log's cursors: where the last entry listed is (its segment's number and its place
 * there) and how many entries, from the newest, were walked to reach it.
 */
const REQUEST_CURSOR = new KeysetCursor('r2', '[1-9][0-9]{0,15}-[0-9]{1,4}-[0-9]{1,5}', 27);

function decodePosition(
  cursor: string | undefined,
): Result<LogPosition | undefined, 'invalid_cursor'> {
  const decoded = REQUEST_CURSOR.decode(cursor);
  if (!decoded.ok) return decoded;
  if (decoded.value === undefined) return ok(undefined);
  const [seq, index, walked] = decoded.value.split('-').map(Number);
  return ok({ seq: seq ?? 0, index: index ?? 0, walked: walked ?? 0 });
}

const positionKey = ({ seq, index, walked }: LogPosition) => `${seq}-${index}-${walked}`;

export interface RequestListQuery extends PageRequest {
  /** `404`, or a class: `4xx`; or `errors`, every 4xx and 5xx. */
  status?: string | undefined;
  keyId?: string | undefined;
  method?: string | undefined;
  path?: string | undefined;
}

/** `404` as the range 404–404, `4xx` as 400–499; `errors` (the portal's filter) as 400–599. */
function statusRange(status: string | undefined): { from: number; to: number } | undefined {
  if (status === undefined) return undefined;
  if (status === 'errors') return { from: 400, to: 599 };
  if (status.endsWith('xx')) {
    const from = Number(status[0]) * 100;
    return { from, to: from + 99 };
  }
  return { from: Number(status), to: Number(status) };
}

/** What a list's filters make of the walk: the test of an entry, and of a segment. */
function filtered(query: RequestListQuery): Pick<LogWalk, 'matches' | 'segments'> {
  const status = statusRange(query.status);
  const { keyId, method, path } = query;
  return {
    matches: (entry) =>
      (status === undefined || (entry.status >= status.from && entry.status <= status.to)) &&
      (keyId === undefined || entry.keyId === keyId) &&
      (method === undefined || entry.method === method) &&
      (path === undefined || entry.path === path),
    segments: {
      withErrors: status !== undefined && status.from >= 400,
      withSuccesses: status !== undefined && status.to < 400,
      // As the segment's text writes them (a JSON string): a segment without it has no match.
      containing: [keyId, method, path].flatMap((value) =>
        value === undefined ? [] : [JSON.stringify(value)],
      ),
    },
  };
}

/**
 * The account's entries of the last 7 days, newest first, in keyset pages: among its newest
 * 10,000 (REQUEST_LOG_MAX_ENTRIES), whatever it holds until housekeeping prunes the rest.
 */
export async function listRequestPage(
  db: ReadDb,
  accountId: string,
  now: Date,
  query: RequestListQuery,
): Promise<Result<Page<RequestLogEntry>, 'invalid_cursor'>> {
  const after = decodePosition(query.cursor);
  if (!after.ok) return after;
  const limit = pageSize(query);
  const { found, stoppedAt } = await walkLog(db, accountId, {
    since: now.getTime() - REQUEST_LOG_KEPT_MS,
    visible: REQUEST_LOG_MAX_ENTRIES,
    after: after.value,
    ...filtered(query),
    take: limit + 1,
  });
  const page = REQUEST_CURSOR.page(
    found,
    limit,
    (item) => positionKey(item.position),
    (item) => toEntry(item.entry),
  );
  // A walk that read its most before a page's worth: this page ends where it stopped, maybe
  // short (empty, even), and the next goes on from there.
  if (stoppedAt !== undefined && found.length <= limit) {
    return ok({ items: page.items, nextCursor: REQUEST_CURSOR.encode(positionKey(stoppedAt)) });
  }
  return ok(page);
}

/** One entry of the account's (the newest, should an id have been sent twice), with the
 * bodies of an error. */
export async function getRequestEntry(
  db: ReadDb,
  accountId: string,
  now: Date,
  id: string,
): Promise<Result<RequestLogEntryDetail, 'not_found'>> {
  const found = await findEntry(db, accountId, {
    id,
    since: now.getTime() - REQUEST_LOG_KEPT_MS,
    visible: REQUEST_LOG_MAX_ENTRIES,
  });
  return found
    ? ok(toDetail(found))
    : fail(
        'not_found',
        `No request ${id} in this account's log (kept 7 days); list it with \`GET /v1/requests\`.`,
      );
}

export const STATS_PERIODS = { '24h': 24, '7d': 7 * 24 } as const;
export type StatsPeriod = keyof typeof STATS_PERIODS;

/** The first hour of a period's counts at `now`: the period ends with the current hour. */
function firstHour(now: Date, period: StatsPeriod): number {
  return hourOf(now.getTime()) - (STATS_PERIODS[period] - 1) * HOUR_MS;
}

/** The oldest hour whose counts are still kept at `now` (the first the 7 days show). */
export function requestHoursKeptSince(now: Date): string {
  return new Date(firstHour(now, '7d')).toISOString();
}

export interface StatusCounts {
  status2xx: number;
  status4xx: number;
  status5xx: number;
  status429: number;
}

export interface RequestStats {
  period: StatsPeriod;
  /** The first hour's start… */
  from: string;
  /** …and the end of the last (the current hour's). */
  to: string;
  /** Every hour of the period, oldest first, those without requests as zeros. */
  hours: Array<{ hour: string } & StatusCounts>;
  totals: StatusCounts;
}

/** The account's requests per hour over the period, ending with the current hour. */
export async function requestStats(
  db: ReadDb,
  accountId: string,
  now: Date,
  period: StatsPeriod,
): Promise<RequestStats> {
  const from = firstHour(now, period);
  const current = hourOf(now.getTime());
  const rows = await hourCounts(db, accountId, new Date(from).toISOString());
  const byHour = new Map(rows.map((row) => [Date.parse(toIso(row.hour)), row]));
  const totals: StatusCounts = { status2xx: 0, status4xx: 0, status5xx: 0, status429: 0 };
  const hours: RequestStats['hours'] = [];
  for (let hour = from; hour <= current; hour += HOUR_MS) {
    const row = byHour.get(hour);
    const counts: StatusCounts = {
      status2xx: Number(row?.s2xx ?? 0),
      status4xx: Number(row?.s4xx ?? 0),
      status5xx: Number(row?.s5xx ?? 0),
      status429: Number(row?.s429 ?? 0),
    };
    for (const name of Object.keys(totals) as Array<keyof StatusCounts>)
      totals[name] += counts[name];
    hours.push({ hour: new Date(hour).toISOString(), ...counts });
  }
  return {
    period,
    from: new Date(from).toISOString(),
    to: new Date(current + HOUR_MS).toISOString(),
    hours,
    totals,
  };
}
