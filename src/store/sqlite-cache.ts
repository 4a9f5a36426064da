import type SqliteDatabase from 'better-sqlite3';
import type { SqliteDatabase as KyselySqlite, SqliteStatement } from 'kysely';

/** Most distinct SQL texts kept prepared; our queries are a few dozen shapes. */
const STATEMENTS = 500;
/** Most query results kept; each is a page of rows at most. */
const RESULTS = 2_000;

const READ = /^\s*select\b/i;
/** How stale a cached read may be with respect to other processes' commits. */
const EXTERNAL_MS = 10;

/**
 * better-sqlite3 as Kysely sees it, with two caches in front (the embedded mode's read path):
 *
 * - Prepared statements, by SQL text: Kysely prepares every query it runs, and preparing costs
 *   more than running a keyset page.
 * - Results of `select`s, by SQL text and parameters, valid only while the database is exactly
 *   as it was when they were read: any statement other than a select run through this handle
 *   (insert, update, delete, begin, commit, rollback…) empties the cache, and so does a commit
 *   by any other connection or process (SQLite's `data_version`, checked at most every 10 ms:
 *   the CLI revoking a key is seen within 10 ms; this process's own writes at once).
 *
 * Statements run synchronously (`all`, `run`), one at a time. Cached rows are shared between
 * callers, which only read them (repositories map rows to new objects).
 */
export interface CachedSqlite extends KyselySqlite {
  /** Changes whenever a commit by another connection or process is noticed (within 10 ms). */
  changesElsewhere(): number;
}

export function cachedSqlite(sqlite: SqliteDatabase.Database): CachedSqlite {
  const statements = new Map<string, SqliteStatement>();
  const results = new Map<string, unknown[]>();
  const dataVersion = sqlite.prepare('pragma data_version').pluck();
  let seenVersion = dataVersion.get();

  let elsewhere = 0;
  const invalidate = () => {
    results.clear();
  };
  // Asking SQLite for data_version takes a read lock (~15 µs): ask at most once a
  // millisecond-window, so another process's commit (the CLI's) is seen within EXTERNAL_MS.
  let checkedAt = 0;
  const fresh = () => {
    const now = performance.now();
    if (now - checkedAt < EXTERNAL_MS) return;
    checkedAt = now;
    const version = dataVersion.get();
    if (version !== seenVersion) {
      seenVersion = version;
      elsewhere++;
      invalidate();
    }
  };

  function wrap(text: string, statement: SqliteDatabase.Statement): SqliteStatement {
    if (!READ.test(text) || !statement.reader) {
      return {
        reader: statement.reader,
        all: (parameters) => {
          invalidate();
          return statement.all(parameters);
        },
        run: (parameters) => {
          invalidate();
          return statement.run(parameters);
        },
        iterate: (parameters) => {
          invalidate();
          return statement.iterate(parameters);
        },
      };
    }
    return {
      reader: true,
      all: (parameters) => {
        fresh();
        const key = `${text}\u0000${JSON.stringify(parameters)}`;
        let rows = results.get(key);
        if (!rows) {
          rows = statement.all(parameters);
          if (results.size >= RESULTS) results.clear();
          results.set(key, rows);
        }
        return rows;
      },
      run: (parameters) => statement.run(parameters),
      iterate: (parameters) => statement.iterate(parameters),
    };
  }

  return {
    changesElsewhere: () => {
      fresh();
      return elsewhere;
    },
    close: () => sqlite.close(),
    prepare: (text) => {
      let statement = statements.get(text);
      if (!statement) {
        if (statements.size >= STATEMENTS) statements.clear();
        statement = wrap(text, sqlite.prepare(text));
        statements.set(text, statement);
      }
      return statement;
    },
  };
}
