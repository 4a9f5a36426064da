import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, type Migration, Migrator, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import * as initial from './migrations/0001_initial.js';
import * as messages from './migrations/0002_messages.js';
import * as deprecatedCalls from './migrations/0003_deprecated_calls.js';
import * as orders from './migrations/0004_orders.js';
import type { Tables } from './tables.js';

export type Dialect = 'sqlite' | 'postgres';
export type Db = Kysely<Tables>;

export interface Database {
  readonly db: Db;
  readonly dialect: Dialect;
  /** Safe to call more than once. */
  close(): Promise<void>;
}

export interface DatabaseOptions {
  poolSize?: number;
}

// PostgreSQL sends int8 (bigint ids, count(*)) as text; our ids stay far below 2^53.
const INT8_OID = 20;
const pgTypes = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === INT8_OID
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

export function openDatabase(url: string, options: DatabaseOptions = {}): Database {
  const dialect: Dialect = url.startsWith('sqlite:') ? 'sqlite' : 'postgres';
  let db: Db;
  if (dialect === 'sqlite') {
    const path = url.slice('sqlite:'.length);
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const sqlite = new SqliteDatabase(path);
    sqlite.pragma('journal_mode = WAL');
    // FULL: a commit we acknowledged survives a power cut, not just a process crash.
    sqlite.pragma('synchronous = FULL');
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('busy_timeout = 5000');
    db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: sqlite }) });
  } else {
    const pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize ?? 10,
      types: pgTypes,
      connectionTimeoutMillis: 5_000,
      statement_timeout: 10_000,
    });
    db = new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) });
  }
  let closing: Promise<void> | undefined;
  return {
    db,
    dialect,
    close: () => {
      closing ??= db.destroy();
      return closing;
    },
  };
}

function migrations(dialect: Dialect): Record<string, Migration> {
  return {
    '0001_initial': { up: (db) => initial.up(db, dialect) },
    '0002_messages': { up: (db) => messages.up(db, dialect) },
    '0003_deprecated_calls': { up: (db) => deprecatedCalls.up(db, dialect) },
    '0004_orders': { up: (db) => orders.up(db, dialect) },
  };
}

/** Brings the schema up to date; safe to run from several processes at once. */
export async function migrate(database: Database): Promise<string[]> {
  const migrator = new Migrator({
    db: database.db,
    provider: { getMigrations: async () => migrations(database.dialect) },
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
