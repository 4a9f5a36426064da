/**
 * Store errors that are not a fault of our code. The store being away, overloaded or unable to
 * store: answered 503 with Retry-After, and a client may retry as it is (nothing was stored).
 * A value the store refuses (a NUL PostgreSQL cannot hold, a number out of range) that
 * validation let through: answered 400.
 */
export type StoreTrouble =
  /** The database cannot be reached, or dropped the connection: an outage. */
  | 'unreachable'
  /** It answered, but could not serve the statement in time (timeout, lock, too busy). */
  | 'busy'
  /** It answered, but cannot store anything now: its disk is full or failing, or it ran out of
   * memory. Waiting alone may not mend it: whoever runs it must. */
  | 'failing';

/**
 * Marks the errors a PostgreSQL pool or connection of the store raised (src/store/pg-pool.ts).
 * A symbol on the error itself, not a set of them: the mark goes where the error goes, and
 * nothing is kept between apps.
 */
const RAISED_BY_POSTGRES = Symbol('raised by a PostgreSQL connection of the store');

/**
 * Marks `err` as raised by one of the store's PostgreSQL pools or connections, and returns it.
 * Only they mark: an errno code alone (ECONNRESET, EPIPE…) says nothing of whose socket failed
 * (storeTrouble).
 */
export function raisedByPostgres<E>(err: E): E {
  if (typeof err === 'object' && err !== null && Object.isExtensible(err)) {
    (err as { [RAISED_BY_POSTGRES]?: true })[RAISED_BY_POSTGRES] = true;
  }
  return err;
}

function fromPostgres(err: Error): boolean {
  return (err as { [RAISED_BY_POSTGRES]?: true })[RAISED_BY_POSTGRES] === true;
}

/** An error's `code` (an errno name, a SQLite result code, an SQLSTATE), when it has one. */
export function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Socket-level failures of a connection to the database server. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** The trouble a SQLite result code stands for (https://sqlite.org/rescode.html). */
function sqliteTrouble(code: string): StoreTrouble | undefined {
  // Another process holds the write lock past busy_timeout.
  if (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_')) return 'busy';
  // The disk is full (or the file at its max_page_count), failed a read, write or sync, or
  // SQLite could not allocate memory.
  if (/^SQLITE_(FULL|IOERR|NOMEM)(_|$)/.test(code)) return 'failing';
  return undefined;
}

/**
 * PostgreSQL SQLSTATEs (https://www.postgresql.org/docs/current/errcodes-appendix.html):
 * class 08 is a connection exception; 57P01-57P03 a server shutting down, crashed or starting;
 * class 53 insufficient resources (disk full 53100, out of memory 53200, too many connections);
 * 58030 an I/O error.
 */
function postgresTrouble(code: string): StoreTrouble | undefined {
  if (code.startsWith('08') || /^57P0[1-3]$/.test(code)) return 'unreachable';
  if (code === '53100' || code === '53200' || code === '58030') return 'failing';
  // 57014: the statement timeout cancelled it; 55P03: a lock was not free; 40P01: deadlock.
  if (code.startsWith('53') || code === '57014' || code === '55P03' || code === '40P01') {
    return 'busy';
  }
  return undefined;
}

/** What node-postgres and its pool say, without a code, when a connection is lost or none
 * can be had. */
const LOST_CONNECTION =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable|Connection ended)/;

/**
 * The trouble a store error stands for, or undefined when it is not one of availability, or
 * not the store's at all: only what the store's drivers raised is judged, SQLite's by their
 * codes, PostgreSQL's by `raisedByPostgres` (docs/decisions/0066-client-socket-errors.md).
 */
export function storeTrouble(err: unknown): StoreTrouble | undefined {
  if (!(err instanceof Error)) return undefined;
  const code = codeOf(err);
  if (code?.startsWith('SQLITE_')) return sqliteTrouble(code);
  if (!fromPostgres(err)) return undefined;
  if (code !== undefined) {
    if (NETWORK_CODES.has(code)) return 'unreachable';
    if (/^[0-9A-Z]{5}$/.test(code)) return postgresTrouble(code);
  }
  if (LOST_CONNECTION.test(err.message)) return 'unreachable';
  // An AggregateError of every address tried (ECONNREFUSED on ::1 and on 127.0.0.1).
  if (err instanceof AggregateError) {
    return err.errors.some((each) => NETWORK_CODES.has(codeOf(each) ?? ''))
      ? 'unreachable'
      : undefined;
  }
  return undefined;
}

/**
 * PostgreSQL refused a value of the request itself (SQLSTATE class 22, data exception: a NUL
 * in text, an invalid byte sequence, a number out of range). Validation should stop these
 * first; this keeps one it missed a 400, not a 500.
 */
export function valueRefused(err: unknown): boolean {
  return err instanceof Error && fromPostgres(err) && /^22[0-9A-Z]{3}$/.test(codeOf(err) ?? '');
}

/** A foreign key the database refused, on either store: services turn it into an outcome
 * (`unknown_category`, `category_in_use`). */
export function isForeignKeyViolation(err: unknown): boolean {
  const code = codeOf(err);
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}
