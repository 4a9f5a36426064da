import { type FileHandle, open } from 'node:fs/promises';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import { type Migration, Migrator } from 'kysely/migration';
import pg from 'pg';
import type { CacheStats } from '../bounded-cache.js';
import { withTimeout } from '../clock.js';
import { GroupCommit, type WriteOptions } from './group-commit.js';
import { type Db, lendReader, type ReadDb, type Tx } from './handles.js';
import { IdClock } from './id-clock.js';
import * as initial from './migrations/0001_initial.js';
import * as messages from './migrations/0002_messages.js';
import * as deprecatedCalls from './migrations/0003_deprecated_calls.js';
import * as orders from './migrations/0004_orders.js';
import * as portalSessions from './migrations/0005_portal_sessions.js';
import * as perAccountIds from './migrations/0006_per_account_ids.js';
import * as idempotencyKeys from './migrations/0007_idempotency_keys.js';
import * as eventsWebhooks from './migrations/0008_events_webhooks.js';
import * as idempotencyKeyedHashes from './migrations/0010_idempotency_keyed_hashes.js';
import * as webhookDeliverySlots from './migrations/0011_webhook_delivery_slots.js';
import * as webhookEndpointEvents from './migrations/0012_webhook_endpoint_events.js';
import * as requestLog from './migrations/0013_request_log.js';
import * as keyScopes from './migrations/0014_key_scopes.js';
import * as requestLogSegments from './migrations/0015_request_log_segments.js';
import * as requestLogLookup from './migrations/0016_request_log_lookup.js';
import * as idempotencyCredentials from './migrations/0017_idempotency_credentials.js';
import * as traceContext from './migrations/0018_trace_context.js';
import * as messagesByAccount from './migrations/0019_messages_by_account.js';
import * as keyOrigins from './migrations/0020_key_origins.js';
import { PgGroupCommit } from './pg-group-commit.js';
import { StorePool } from './pg-pool.js';
import { checkpointOffThread } from './sqlite-checkpoints.js';
import { privateSqliteFiles } from './sqlite-files.js';
import { sqliteStatements } from './sqlite-statements.js';
import type { Tables } from './tables.js';

export type { ReadDb, Tx } from './handles.js';
export type Dialect = 'sqlite' | 'postgres';

export interface PoolStats {
  /** Connections open, busy or idle. */
  total: number;
  idle: number;
  /** Queries waiting for a connection. */
  waiting: number;
}

export interface Database {
  /**
   * Reads outside a write. On SQLite a read-only connection of its own: it sees every commit
   * at once and, the database being in WAL mode, never waits for a write in progress (a group
   * commit holds the writer's one connection across event-loop turns). On PostgreSQL, the pool.
   * (A `sqlite::memory:` database has one connection for both: there a write's work that reads
   * through `reader` rather than its `Tx` waits for itself.)
   */
  readonly reader: ReadDb;
  readonly dialect: Dialect;
  /** The PostgreSQL pool's state; undefined on SQLite (one connection, no pool). */
  poolStats(): PoolStats | undefined;
  /**
   * Runs a write that will be acknowledged to a client: the one way to change data. Concurrent
   * ones share one transaction and one commit (group commit: SQLite's GroupCommit, PostgreSQL's
   * PgGroupCommit), each in a savepoint of its own: all or nothing (a Change runs as one write:
   * src/store/change.ts).
   * Resolves after the write is committed. Rejects with a WriteRefusedError when it was refused
   * before anything was done (closing, or a sync failed earlier), and with an
   * OutcomeUnknownError when it was committed, or may have been, without it being known to
   * be durable (a failed sync, a COMMIT whose answer was lost): never as if nothing changed.
   *
   * The work gets a `Tx`, the only handle writing repository functions take, and there is no
   * other writing handle to capture: reading or writing past the batch, or starting a
   * transaction inside it (which on SQLite waited for the batch that waits for the work),
   * does not compile. Calling `write` again from inside the work still would deadlock; nothing
   * does. Work that waits on anything but the store (a password hash, Redis) belongs before or
   * after the write: the batch waits with it.
   */
  write<T>(work: (tx: Tx) => Promise<T>, options?: WriteOptions): Promise<T>;
  /**
   * Counts the commits of other connections and processes noticed so far (within 10 ms of
   * them), so that what depends on rows only this process otherwise changes (API keys, plans)
   * can be kept across this process's own writes. Undefined on PostgreSQL.
   */
  changesElsewhere(): number | undefined;
  /** Its caches, for /metrics: the SQLite connections' prepared statements. */
  readonly caches: readonly CacheStats[];
  /** Its schema: compared with this code's migrations, brought up to date. */
  readonly schema: Schema;
  /** Answers a trivial query within the time given, or rejects: through the writer's
   * connection, the one writes need. */
  ping(timeoutMs: number): Promise<void>;
  /**
   * Refuses new writes, commits and answers those already queued (their syncs included), then
   * closes the connections. Safe to call more than once.
   */
  close(): Promise<void>;
}

/** What runs writes, for services that do work of their own around them (hash, announce). */
export type Writer = Pick<Database, 'write'>;

export interface DatabaseOptions {
  poolSize?: number;
  /** PostgreSQL cancels a statement running longer than this. */
  statementTimeoutMs?: number;
  /**
   * How SQLite's WAL file is synced after a commit: `file.datasync()` (fdatasync). A test
   * wraps the real sync to make it fail, as a failing disk would.
   */
  datasync?: (file: FileHandle) => Promise<void>;
  /** Told of trouble that fails no request (a SQLite checkpoint that failed, say). */
  warn?: (message: string) => void;
}

// PostgreSQL sends int8 (bigint ids, count(*)) as text; our ids stay far below 2^53.
const INT8_OID = 20;
const pgTypes = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === INT8_OID
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/**
 * fdatasync of a database's WAL file, on libuv's thread pool: what synchronous=FULL would do
 * inside every commit, with the event loop waiting. Opened at the first sync (SQLite makes the
 * file at the first write) and kept: SQLite reuses the file, and deletes it only when its last
 * connection closes.
 */
function walSync(
  path: string,
  datasync: (file: FileHandle) => Promise<void> = (file) => file.datasync(),
): { sync: () => Promise<void>; close: () => Promise<void> } {
  let file: Promise<FileHandle> | undefined;
  const opened = () =>
    (file ??= open(`${path}-wal`, 'r').catch((error: unknown) => {
      file = undefined; // opened again at the next sync
      throw error;
    }));
  return {
    sync: async () => {
      try {
        await datasync(await opened());
      } catch (error) {
        // What SQLite says of a failed sync in a commit of its own (synchronous=FULL).
        throw Object.assign(new Error(`disk I/O error: ${(error as Error).message}`), {
          code: 'SQLITE_IOERR_FSYNC',
          cause: error,
        });
      }
    },
    close: async () => {
      await (await file?.catch(() => undefined))?.close();
    },
  };
}

/** The read-only connection beside the writer's (which made the file, in WAL mode, first). */
function openReader(path: string): SqliteDatabase.Database {
  const sqlite = new SqliteDatabase(path, { readonly: true });
  sqlite.pragma('busy_timeout = 5000');
  return sqlite;
}

export function openDatabase(url: string, options: DatabaseOptions = {}): Database {
  const dialect: Dialect = url.startsWith('sqlite:') ? 'sqlite' : 'postgres';
  let db: Db;
  let reader: Db;
  let pool: pg.Pool | undefined;
  let changesElsewhere = (): number | undefined => undefined;
  const caches: CacheStats[] = [];
  /** Orders the ids the writes make (src/store/id-clock.ts): lent with every write's `Tx`. */
  const ids = new IdClock();
  let group: Pick<GroupCommit, 'run' | 'close'>;
  /** Stops what works beside the writer's connection (SQLite's checkpoint thread, its reader)
   * before it closes. */
  let closeFirst = async () => {};
  /** Closes what the connections needed until they closed (the WAL file's handle). */
  let closeLast = async () => {};
  if (dialect === 'sqlite') {
    const path = url.slice('sqlite:'.length);
    // Only its owner may read it: the folder made 0700, the files 0600 (src/store/sqlite-files.ts).
    if (path !== ':memory:') privateSqliteFiles(path, options.warn);
    const sqlite = new SqliteDatabase(path);
    sqlite.pragma('journal_mode = WAL');
    // A commit we acknowledge survives a power cut, not just a process crash: SQLite's commit
    // writes the WAL (NORMAL), and group commit syncs it off the event loop before anyone is
    // told (walSync). Checkpoints sync too, on a thread of their own. An in-memory database has
    // no file.
    const wal = path === ':memory:' ? undefined : walSync(path, options.datasync);
    sqlite.pragma(`synchronous = ${wal ? 'NORMAL' : 'FULL'}`);
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('busy_timeout = 5000');
    const statements = sqliteStatements(sqlite);
    caches.push(statements.statements);
    let elsewhere = 0;
    changesElsewhere = () => {
      // Once closed, nothing more is noticed: a request given up on at shutdown may still ask.
      if (sqlite.open) elsewhere = statements.changesElsewhere();
      return elsewhere;
    };
    db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: statements }) });
    group = new GroupCommit(db, sqlite, statements, wal?.sync, ids);
    // A second connection to an in-memory database would be another database.
    const readerSqlite = path === ':memory:' ? undefined : openReader(path);
    if (readerSqlite) {
      const readerStatements = sqliteStatements(readerSqlite, 'reader statements');
      caches.push(readerStatements.statements);
      reader = new Kysely<Tables>({ dialect: new SqliteDialect({ database: readerStatements }) });
    } else {
      reader = db;
    }
    // Last: nothing after it can fail and leave the thread running.
    const checkpoints = wal && checkpointOffThread(sqlite, path, { warn: options.warn });
    // The writer's connection closes last: the last connection to close checkpoints and removes
    // the WAL, which a read-only one cannot. Kysely closes a connection only if it lent it once:
    // a reader never read through (a CLI command's, say) would stay open, and its files with it.
    closeFirst = async () => {
      await checkpoints?.close();
      if (readerSqlite?.open) readerSqlite.close();
    };
    closeLast = async () => {
      if (sqlite.open) sqlite.close();
      await wal?.close();
    };
  } else {
    const poolConfig: pg.PoolConfig = {
      connectionString: url,
      types: pgTypes,
      // Waiting longer than this for a connection fails the request (503) instead of piling up.
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
      statement_timeout: options.statementTimeoutMs ?? 10_000,
    };
    pool = listened(new StorePool({ ...poolConfig, max: options.poolSize ?? 10 }));
    db = new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) });
    reader = db;
    // Group commit's own connection, pipelined; one batch at a time uses it.
    group = new PgGroupCommit(
      listened(new StorePool({ ...poolConfig, max: 1, pipeline: true })),
      ids,
    );
  }
  let closing: Promise<void> | undefined;
  // The writing handle `db` stays here: the schema's work and ping run on it, and nothing else
  // can reach past `write`.
  return {
    reader: lendReader(reader),
    dialect,
    write: (work, options) => group.run(work, options),
    changesElsewhere,
    caches,
    schema: schemaOf(db, dialect),
    ping: async (timeoutMs) => {
      const query = dialect === 'sqlite' ? sql`pragma user_version` : sql`select 1`;
      await withTimeout(query.execute(db), timeoutMs);
    },
    poolStats: () =>
      pool && { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount },
    close: () => {
      // The writes queued and the sync in flight first (the group commit commits and answers
      // what is queued, syncs included): destroying the connection under them failed them
      // (500, "The database connection is not open") though some had committed.
      closing ??= (async () => {
        await group.close();
        await closeFirst();
        await Promise.all([db.destroy(), reader === db ? undefined : reader.destroy()]);
        await closeLast();
      })();
      return closing;
    },
  };
}

/**
 * A server restart or a dropped connection is reported as an 'error' event on the client:
 * through the pool for idle clients, but on the client itself for one checked out (the pool
 * takes its listener off while the client is lent), where an unheard event would end the
 * process. Either way the client's next query fails and is answered 503 (storeTrouble), and
 * the pool discards the client and connects afresh, so here we only have to listen.
 */
function listened(pool: pg.Pool): pg.Pool {
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/** The names of this code's migrations, in their order. */
export function migrationNames(): string[] {
  return Object.keys(migrations('sqlite'));
}

function migrations(dialect: Dialect): Record<string, Migration> {
  return {
    '0001_initial': { up: (db) => initial.up(db, dialect) },
    '0002_messages': { up: (db) => messages.up(db, dialect) },
    '0003_deprecated_calls': { up: (db) => deprecatedCalls.up(db, dialect) },
    '0004_orders': { up: (db) => orders.up(db, dialect) },
    '0005_portal_sessions': { up: (db) => portalSessions.up(db, dialect) },
    '0006_per_account_ids': { up: (db) => perAccountIds.up(db, dialect) },
    '0007_idempotency_keys': { up: (db) => idempotencyKeys.up(db, dialect) },
    '0008_events_webhooks': { up: (db) => eventsWebhooks.up(db, dialect) },
    '0010_idempotency_keyed_hashes': { up: (db) => idempotencyKeyedHashes.up(db) },
    '0011_webhook_delivery_slots': { up: (db) => webhookDeliverySlots.up(db, dialect) },
    '0012_webhook_endpoint_events': { up: (db) => webhookEndpointEvents.up(db, dialect) },
    '0013_request_log': { up: (db) => requestLog.up(db, dialect) },
    '0014_key_scopes': { up: (db) => keyScopes.up(db) },
    '0015_request_log_segments': { up: (db) => requestLogSegments.up(db, dialect) },
    '0016_request_log_lookup': { up: (db) => requestLogLookup.up(db, dialect) },
    '0017_idempotency_credentials': { up: (db) => idempotencyCredentials.up(db) },
    '0018_trace_context': { up: (db) => traceContext.up(db) },
    '0019_messages_by_account': { up: (db) => messagesByAccount.up(db) },
    '0020_key_origins': { up: (db) => keyOrigins.up(db) },
  };
}

/** The schema is of another version of the code; the message says what to do. */
export class SchemaMismatchError extends Error {
  override name = 'SchemaMismatchError';
}

export interface SchemaStatus {
  /** Migrations applied, in the order they were (by name, whatever order they came in). */
  applied: string[];
  /** Migrations of this code not yet applied. */
  pending: string[];
  /** Migrations applied by a newer version of the code, unknown to this one. */
  unknown: string[];
}

/** A database's schema, worked on through its writing connection. */
export interface Schema {
  /** Compares the migrations this code has with those the database has run. */
  status(): Promise<SchemaStatus>;
  /**
   * Brings the schema up to date; answers the migrations applied. Safe to run from several
   * processes at once: Kysely's migrator holds a lock while it works (an advisory lock on
   * PostgreSQL), so one instance migrates and the others find the work done. A database
   * migrated by newer code is refused, not touched.
   */
  migrate(): Promise<string[]>;
  /** For starts that do not migrate (MIGRATE_ON_START=false): the schema must be exactly ours. */
  assertCurrent(): Promise<void>;
  /**
   * Brings the schema up to the migration named `last` and no further: for a test of a
   * migration on the data that came before it.
   */
  migrateTo(last: string): Promise<void>;
}

function schemaOf(db: Db, dialect: Dialect): Schema {
  const migrator = () =>
    new Migrator({
      db,
      provider: { getMigrations: async () => migrations(dialect) },
      allowUnorderedMigrations: true,
    });
  const status = async (): Promise<SchemaStatus> => {
    const known = Object.keys(migrations(dialect));
    let applied: string[] = [];
    try {
      const rows = await sql<{
        name: string;
      }>`select name from kysely_migration order by timestamp, name`.execute(db);
      applied = rows.rows.map((row) => row.name);
    } catch {
      // No migration table yet: a new, empty database.
    }
    return {
      applied,
      pending: known.filter((name) => !applied.includes(name)),
      unknown: applied.filter((name) => !known.includes(name)),
    };
  };
  const migrateNow = async (attempt = 1): Promise<string[]> => {
    refuseNewerSchema(await status());
    const { error, results } = await migrator().migrateToLatest();
    // Kysely takes no lock on SQLite (it expects one connection): a second process that started
    // migrating at the same moment fails on the tables the first has just made. By then the
    // first has committed, so looking again finds the work done.
    if (error && dialect === 'sqlite' && attempt < 3 && /already exists/.test(String(error))) {
      return migrateNow(attempt + 1);
    }
    if (error) throw error;
    return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  };
  return {
    status,
    migrate: () => {
      if (dialect === 'postgres') return migrateNow();
      // SQLite waits for a lock synchronously, stopping the event loop: a second migration in
      // this process would wait for one that cannot go on (0006 holds its transaction across
      // awaits). Other processes wait only themselves.
      const run = sqliteMigrations.then(() => migrateNow());
      sqliteMigrations = run.catch(() => {});
      return run;
    },
    assertCurrent: async () => {
      const current = await status();
      refuseNewerSchema(current);
      if (current.pending.length > 0) {
        throw new SchemaMismatchError(
          `The database schema is behind this version of the code (missing ${current.pending.join(', ')}). ` +
            'Run `animal-store migrate` first, or start with MIGRATE_ON_START=true.',
        );
      }
    },
    migrateTo: async (last) => {
      const { error } = await migrator().migrateTo(last);
      if (error) throw error;
    },
  };
}

function refuseNewerSchema(status: SchemaStatus): void {
  if (status.unknown.length === 0) return;
  throw new SchemaMismatchError(
    `The database schema is newer than this version of the code: it has migration(s) ` +
      `${status.unknown.join(', ')}, which this version does not know. Run the version that ` +
      'migrated it (or a newer one); never an older one.',
  );
}

/**
 * This process's SQLite migrations, one at a time, whichever database each is of (see
 * `Schema.migrate`). The one module-level state of the store, and the process's, not an app's:
 * it orders uses of the process's one thread, which better-sqlite3 blocks while it waits for a
 * lock, and holds nothing of any database (docs/decisions/0009-state-owned-by-instances.md).
 */
let sqliteMigrations: Promise<unknown> = Promise.resolve();
