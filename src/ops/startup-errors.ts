import { storeName } from '../config.js';
import { codeOf } from '../store/store-errors.js';

/**
 * The start-up mistakes people make, each as a sentence that names the setting and the fix
 * (issue 22): an operator reads one or two lines, not a stack. Anything not listed here is
 * reported as "could not start" with its message, and the stack only at LOG_LEVEL=debug.
 */

/** A failure at start that the operator can fix: its message is all they need to read. */
export class StartupError extends Error {
  override name = 'StartupError';
}

/**
 * Why a listener could not be opened on HOST:PORT (`prefix` names the metrics listener's
 * METRICS_HOST and METRICS_PORT), or undefined when it is something else.
 */
export function listenFailure(
  err: unknown,
  host: string,
  port: number,
  prefix = '',
): string | undefined {
  const code = codeOf(err);
  if (code === 'EADDRINUSE') {
    return `Port ${port} is already in use on ${host}: stop what listens there, or start with ${prefix}PORT=<another port>.`;
  }
  if (code === 'EACCES') {
    return `Not allowed to listen on ${host}:${port}: ports below 1024 need privileges; use ${prefix}PORT=8080 or above.`;
  }
  if (code === 'EADDRNOTAVAIL') {
    return `${prefix}HOST=${host} is not an address of this machine: use 127.0.0.1 (this machine only), 0.0.0.0 (every interface) or one of its own addresses.`;
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') {
    return `${prefix}HOST=${host} is not a known host name: use an address such as 127.0.0.1 or 0.0.0.0.`;
  }
  return undefined;
}

/** Why the database (either kind) will not serve us, for a reason waiting will not fix. */
export function databaseFailure(err: unknown, databaseUrl: string): string | undefined {
  return sqliteFailure(err, databaseUrl) ?? postgresFailure(err, databaseUrl);
}

/** Why a SQLite file could not be opened or made, or undefined. */
export function sqliteFailure(err: unknown, databaseUrl: string): string | undefined {
  if (!databaseUrl.startsWith('sqlite:')) return undefined;
  const path = databaseUrl.slice('sqlite:'.length);
  const code = codeOf(err);
  const setting = `DATABASE_URL=${databaseUrl}`;
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return `Cannot create the folder of ${path} (${code}: not writable by this user): make that folder writable, or set DATABASE_URL=sqlite:<a path this user may write>.`;
  }
  if (code === 'ENOTDIR' || code === 'EEXIST') {
    return `Cannot create the folder of ${path}: part of its path is a file, not a folder; fix ${setting}.`;
  }
  if (code === 'SQLITE_CANTOPEN') {
    return `Cannot open the SQLite file ${path}: check that its folder exists and is writable, or fix ${setting}.`;
  }
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
    return `${path} is not a SQLite database of this service: point DATABASE_URL at another file, or move this one away.`;
  }
  if (code === 'SQLITE_READONLY' || code?.startsWith('SQLITE_READONLY_')) {
    return `The SQLite file ${path} is read-only for this user: make it writable, or fix ${setting}.`;
  }
  if (code === 'SQLITE_FULL') {
    return `The disk holding ${path} is full: free some space, or fix ${setting}.`;
  }
  return undefined;
}

/**
 * PostgreSQL answered, but refuses to serve us for a reason waiting will not fix: the database
 * is missing, or the user or password is wrong. Undefined otherwise (refused connections and
 * the like are waited for: the database may start after the service).
 */
export function postgresFailure(err: unknown, databaseUrl: string): string | undefined {
  if (!/^postgres(ql)?:/.test(databaseUrl)) return undefined;
  const code = codeOf(err);
  const where = storeName(databaseUrl);
  let user = '';
  let database = '';
  try {
    const parsed = new URL(databaseUrl);
    user = decodeURIComponent(parsed.username);
    database = decodeURIComponent(parsed.pathname.slice(1));
  } catch {
    // storeName already stands for it.
  }
  // https://www.postgresql.org/docs/current/errcodes-appendix.html
  if (code === '3D000') {
    return `${where}: the database "${database}" does not exist: create it (createdb ${database || '<name>'}) or fix the database name in DATABASE_URL.`;
  }
  if (code === '28P01') {
    return `${where}: password authentication failed for user "${user}": fix the user or password in DATABASE_URL.`;
  }
  if (code === '28000') {
    const first = err instanceof Error ? err.message : String(err);
    return `${where}: the server refused user "${user}" (${first}): fix the user in DATABASE_URL, or allow it in pg_hba.conf.`;
  }
  return undefined;
}

/**
 * The fix to suggest while a dependency does not answer yet (the service waits for it): which
 * setting names it. One short clause, appended to the waiting line.
 */
export function waitingHint(err: unknown, setting: string): string {
  const code = codeOf(firstOf(err));
  if (code === 'ECONNREFUSED')
    return `connection refused: is it running, and does ${setting} name it?`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return `unknown host: check the host in ${setting}`;
  if (code === 'ETIMEDOUT' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH') {
    return `no answer from that address: check ${setting} and the network`;
  }
  return `check that it is running and that ${setting} names it`;
}

function firstOf(err: unknown): unknown {
  return err instanceof AggregateError && err.errors.length > 0 ? err.errors[0] : err;
}
