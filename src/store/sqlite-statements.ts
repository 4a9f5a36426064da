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
 * Statements run synchronously (`all`, `run`), one at a time.
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
        statement = sqlite.prepare(text);
        statements.set(text, statement);
      }
      return statement;
    },
  };
}
