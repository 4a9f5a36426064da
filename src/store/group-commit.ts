import { sql } from 'kysely';
import type { MaybePromise } from '../maybe.js';
import type { Db } from './database.js';
import { type DirectRunner, runDirectly } from './prepared.js';

interface Pending {
  work: (db: Db) => Promise<unknown>;
  oneStatement: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export interface WriteOptions {
  /**
   * The work changes data with one statement, its last: SQLite undoes a statement that fails
   * by itself, so the write needs no savepoint of its own (~2-4 µs saved). Should the work
   * fail after its statement changed rows, the whole batch is rolled back and fails.
   */
  oneStatement?: boolean;
}

export interface GroupCommitOptions {
  /**
   * Runs `savepoint`/`release` text on the connection directly, where the database can
   * (SQLite: microseconds instead of a trip through the query builder). Neither changes
   * data, so the select cache need not hear of them; `rollback to` does, and goes through
   * Kysely.
   */
  savepoint?: (db: Db, text: 'savepoint write' | 'release write') => MaybePromise<unknown>;
  /** Where the database can, hot queries run directly on the batch's connection. */
  direct?: DirectRunner;
  /** Rows changed on the connection so far (SQLite's total_changes()) and whether its
   * transaction is still open: without them, every write has its savepoint. */
  changes?: () => number;
  inTransaction?: () => boolean;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Writes per transaction at most, so one batch never holds the database for long. */
const MAX_BATCH = 256;

/**
 * Group commit for SQLite. Each durable commit costs an fsync (synchronous=FULL, ~0.2 ms here),
 * during which the one connection, and the event loop with it, waits. Writes that arrive while
 * the event loop turns are gathered and committed together, one fsync for them all; each caller
 * is answered only after that commit, so nothing is acknowledged before it is on disk.
 *
 * Every write runs in a savepoint of its own, or, when it is one statement, in SQLite's own
 * statement rollback: one that fails is rolled back alone and its caller gets its error, while
 * the others commit.
 */
export class GroupCommit {
  private readonly queue: Pending[] = [];
  private flushing = false;

  private readonly savepoint: NonNullable<GroupCommitOptions['savepoint']>;

  constructor(
    private readonly db: Db,
    private readonly options: GroupCommitOptions = {},
  ) {
    this.savepoint = options.savepoint ?? ((db, text) => sql.raw(text).execute(db));
  }

  /**
   * Queues a write. `work` must use only the `db` it is given and must not start a
   * transaction or call `Database.write` itself: the batch holds the one connection until
   * every write in it is done.
   */
  run<T>(work: (db: Db) => Promise<T>, options: WriteOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({
        work,
        oneStatement: options.oneStatement === true,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      if (!this.flushing) {
        this.flushing = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  /** One write in its savepoint; a failure that took the whole transaction fails the batch. */
  private async attempt(connection: Db, item: Pending): Promise<Outcome> {
    const { changes, inTransaction } = this.options;
    if (item.oneStatement && changes && inTransaction) {
      const before = changes();
      let value: unknown;
      try {
        value = await item.work(connection);
      } catch (error) {
        // Its statement failed and SQLite undid it alone: the caller gets the error, the
        // others go on. Anything else (rows changed, the transaction gone) fails the batch.
        if (changes() === before && inTransaction()) return { ok: false, error };
        throw error;
      }
      // A write that swallowed an error which ended the transaction: the writes after it
      // would each commit on their own (the savepoint path notices at its release).
      if (!inTransaction()) throw new Error('the transaction ended during a write');
      return { ok: true, value };
    }
    // Awaited only when it is a promise: on SQLite it is done at once, and an await costs a
    // turn through the microtask queue, twice a write.
    const opened = this.savepoint(connection, 'savepoint write');
    if (opened instanceof Promise) await opened;
    try {
      const value = await item.work(connection);
      const released = this.savepoint(connection, 'release write');
      if (released instanceof Promise) await released;
      return { ok: true, value };
    } catch (error) {
      try {
        await sql`rollback to write`.execute(connection);
        await sql`release write`.execute(connection);
      } catch {
        // No savepoint left to return to (SQLite rolled the transaction back): the writes
        // before this one are gone too, so the batch fails, with this write's error.
        throw error;
      }
      return { ok: false, error };
    }
  }

  /**
   * Commits one batch, then leaves the rest to the next turn of the event loop: a write that
   * resolves here can queue another at once (the worker settles and claims again), and
   * without the turn, a busy queue would keep requests waiting on their sockets unread.
   */
  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, MAX_BATCH);
    const outcomes: Outcome[] = [];
    try {
      await this.db.connection().execute(async (connection) => {
        if (this.options.direct) runDirectly(connection, this.options.direct);
        // IMMEDIATE: the write lock is taken once, up front, so a lock held by another
        // process is waited for (busy_timeout) once per batch, not once per write.
        await sql`begin immediate`.execute(connection);
        try {
          for (const item of batch) outcomes.push(await this.attempt(connection, item));
          await sql`commit`.execute(connection);
        } catch (error) {
          await sql`rollback`.execute(connection).catch(() => {});
          throw error;
        }
      });
      batch.forEach((item, i) => {
        const outcome = outcomes[i];
        if (outcome?.ok) item.resolve(outcome.value);
        else item.reject(outcome?.error);
      });
    } catch (error) {
      // The transaction failed as a whole: nothing of the batch is stored, every caller is told.
      for (const item of batch) item.reject(error);
    }
    if (this.queue.length > 0) setImmediate(() => void this.flush());
    else this.flushing = false;
  }
}
