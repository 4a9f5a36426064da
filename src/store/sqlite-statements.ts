import type SqliteDatabase from 'better-sqlite3';
import type { SqliteDatabase as KyselySqlite, SqliteStatement } from 'kysely';
import { BoundedCache } from '../bounded-cache.js';

/** Most distinct SQL texts kept prepared; our queries are a few dozen shapes. */
const STATEMENTS = 500;
/** How late another process's commit may be noticed. */
const EXTERNAL_MS = 10;

/**
 * better-sqlite3 as Kysely sees it, with its statements kept prepared by SQL text: Kysely
 * prepares every query it runs, and preparing costs more than running a keyset page.
 * Statements run synchronously (`all`, `run`), one at a time. Booleans cross as they do on
 * PostgreSQL (`withBooleans`).
 */
export interface SqliteStatements extends KyselySqlite {
  /**
   * Counts the commits of other connections noticed so far (SQLite's `data_version`, asked at
   * most every 10 ms: the CLI revoking a key is seen within 10 ms). On the writing connection,
   * that is every other process's commit, and none of this process's own.
   */
  changesElsewhere(): number;
  /** The prepared statements, by SQL text. */
  readonly statements: BoundedCache<string, SqliteStatement>;
}

export function sqliteStatements(
  sqlite: SqliteDatabase.Database,
  name = 'statements',
): SqliteStatements {
  const statements = new BoundedCache<string, SqliteStatement>(name, { maxEntries: STATEMENTS });
  const dataVersion = sqlite.prepare('pragma data_version').pluck();
  let seenVersion = dataVersion.get();
  let elsewhere = 0;
  // Asking SQLite for data_version takes a read lock: at most once in EXTERNAL_MS
  // (docs/decisions/0033-kept-pages-and-keys.md).
  let checkedAt = 0;

  return {
    changesElsewhere: () => {
      const now = performance.now();
      if (now - checkedAt >= EXTERNAL_MS) {
        checkedAt = now;
        const version = dataVersion.get();
        if (version !== seenVersion) {
          seenVersion = version;
          elsewhere++;
        }
      }
      return elsewhere;
    },
    statements,
    close: () => sqlite.close(),
    prepare: (text) => {
      let statement = statements.get(text);
      if (!statement) {
        statement = withBooleans(sqlite.prepare(text));
        statements.set(text, statement);
      }
      return statement;
    },
  };
}

/**
 * SQLite has no boolean type: a column declared `boolean` holds 1 or 0, and better-sqlite3
 * binds no JavaScript boolean. So that the table types' booleans (src/store/tables.ts) hold on
 * both stores, a statement binds `true` and `false` as 1 and 0, and answers the columns
 * declared `boolean` as booleans, as PostgreSQL's do: the one place they are converted
 * (docs/decisions/0010-typed-columns.md). Which columns those are is read once, when the
 * statement is prepared (their declared type, which SQLite keeps for RETURNING too).
 */
function withBooleans(statement: SqliteDatabase.Statement): SqliteStatement {
  const flags = statement.reader
    ? statement
        .columns()
        .filter((column) => column.type?.toLowerCase() === 'boolean')
        .map((column) => column.name)
    : [];
  const rows =
    flags.length === 0
      ? (all: unknown[]) => all
      : (all: unknown[]) => {
          for (const row of all as Array<Record<string, unknown>>) {
            for (const name of flags) {
              const value = row[name];
              if (value !== null) row[name] = value !== 0;
            }
          }
          return all;
        };
  return {
    reader: statement.reader,
    all: (parameters) => rows(statement.all(bound(parameters))),
    run: (parameters) => statement.run(bound(parameters)),
    iterate: (parameters) =>
      flags.length === 0
        ? statement.iterate(bound(parameters))
        : rows([...statement.iterate(bound(parameters))]).values(),
  };
}

/** The parameters, booleans as 1 and 0; the same array when it holds none. */
function bound(parameters: readonly unknown[]): readonly unknown[] {
  for (let i = 0; i < parameters.length; i++) {
    if (typeof parameters[i] === 'boolean') {
      return parameters.map((value) => (typeof value === 'boolean' ? Number(value) : value));
    }
  }
  return parameters;
}
