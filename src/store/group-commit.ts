import type SqliteDatabase from 'better-sqlite3';
import { sql } from 'kysely';
import { type Db, type Lent, lendTx, type Tx } from './handles.js';
import { IdClock } from './id-clock.js';
import type { SqliteStatements } from './sqlite-statements.js';

/** How a write may run (Database.write). Every write is all or nothing, in a savepoint of its
 * own within its batch's transaction. */
export interface WriteOptions {
  /**
   * A blind write: its work decides nothing on what it reads (each statement stands on its own,
   * whatever the others answer) and does nothing but its statements. So on PostgreSQL it may run
   * beside the other writes of its batch, pipelined, and run again alone should the batch fail;
   * only the last run's changes and answer count (docs/decisions/0012-unit-of-work.md). A write
   * that reads and then writes on what it read is not blind. SQLite ignores it.
   */
  blind?: boolean;
  /**
   * The account whose rows the write numbers (src/store/numbered.ts). On PostgreSQL a batch
   * locks the id counters of the accounts its writes number for before anything else, in one
   * order, so batches of several instances never deadlock over them; a numbered insert whose
   * write did not say so fails. SQLite ignores it (one writer).
   */
  numbersFor?: string;
}

/** A write waiting for its batch. */
export interface Pending {
  work: (tx: Tx) => Promise<unknown>;
  options: WriteOptions | undefined;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export type Outcome<T = unknown> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * A write that was committed, or may have been, whose caller cannot be told it is done: the
 * commit's sync failed (SQLite), or the answer to COMMIT was lost with its connection
 * (PostgreSQL). Its change may be stored, visible, and its events queued: whoever hears of it
 * must not be told that nothing was changed (docs/decisions/0003-outcome-unknown.md).
 */
export class OutcomeUnknownError extends Error {
  override readonly name = 'OutcomeUnknownError';
}

/** Why a write was refused before its batch began. */
export type Refusal =
  /** The group commit is closing (the process is shutting down). */
  | 'closing'
  /** A sync failed earlier: no later commit could be known to be on disk. */
  | 'failing';

/** A write refused before its batch began: nothing of it was done. */
export class WriteRefusedError extends Error {
  override readonly name = 'WriteRefusedError';
  constructor(
    readonly reason: Refusal,
    options?: ErrorOptions,
  ) {
    super(
      reason === 'closing'
        ? 'the database is closing: the write was refused, nothing was done'
        : 'a WAL sync failed: writes are refused until the process restarts',
      options,
    );
  }
}

/**
 * The outcomes of a batch whose commit is not confirmed: a write rolled back alone keeps its
 * error; the others may be stored, so their callers are told neither that they succeeded nor
 * that they failed.
 */
export function unconfirmed(outcomes: Outcome[], message: string, cause: unknown): Outcome[] {
  return outcomes.map((outcome) =>
    outcome.ok ? { ok: false, error: new OutcomeUnknownError(message, { cause }) } : outcome,
  );
}

/** A committed batch's outcomes once its commit is durable (SQLite's sync). */
export interface Unsynced {
  synced: Promise<Outcome[]>;
}

/** Writes per transaction at most, so one batch never holds the database or its locks for long. */
const MAX_BATCH = 256;

/**
 * What both group commits share (SQLite's GroupCommit below, PostgreSQL's PgGroupCommit): the
 * writes queued while the event loop turns are committed together, a batch at a time, and each
 * caller is answered from its own write's outcome once the batch's commit is confirmed.
 */
export abstract class WriteBatches {
  private readonly queue: Pending[] = [];
  private flushing = false;
  /** Batches taken from the queue whose callers are not answered yet. */
  private unanswered = 0;
  /** Who waits for the queue to be empty and every batch answered (close). */
  private readonly idle: Array<() => void> = [];
  private closed = false;

  /**
   * Runs one batch in one transaction and commits it: each write's outcome, in order, or
   * (SQLite) the promise of them once the commit is durable, which the next batch does not
   * wait for. Throws when the transaction failed as a whole: nothing of the batch is stored.
   */
  protected abstract commit(batch: Pending[]): Promise<Outcome[] | Unsynced>;

  /** Why a write is refused before it is queued, closing aside; nothing by default. */
  protected refused(): WriteRefusedError | undefined {
    return undefined;
  }

  /**
   * Queues a write. `work` gets a `Tx` (see Database.write): it has no other handle to write
   * through, must not begin or end a transaction, and must not call `Database.write` itself.
   */
  run<T>(work: (tx: Tx) => Promise<T>, options?: WriteOptions): Promise<T> {
    const refused = this.closed ? new WriteRefusedError('closing') : this.refused();
    if (refused) return Promise.reject(refused);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, options, resolve: resolve as (value: unknown) => void, reject });
      if (!this.flushing) {
        this.flushing = true;
        // The next check phase: the writes of the requests handled in this one join.
        setImmediate(() => void this.flush());
      }
    });
  }

  /**
   * Refuses writes from now on, commits those already queued and answers them (SQLite: syncs
   * included). Safe to call more than once.
   */
  async close(): Promise<void> {
    this.closed = true;
    while (this.flushing || this.unanswered > 0) {
      await new Promise<void>((resolve) => this.idle.push(resolve));
    }
  }

  /**
   * Commits one batch, then leaves the rest to the next turn of the event loop: a write that
   * resolves here can queue another at once (the worker settles and claims again), and
   * without the turn, a busy queue would keep requests waiting on their sockets unread.
   * The batch's callers are answered once its commit is confirmed; on SQLite the next batch
   * may commit meanwhile (its sync then follows, or is shared with the batches beside it).
   */
  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, MAX_BATCH);
    this.unanswered++;
    let committed: Outcome[] | Unsynced;
    try {
      committed = await this.commit(batch);
    } catch (error) {
      // The transaction failed as a whole: nothing of the batch is stored, every caller is told.
      committed = batch.map(() => ({ ok: false, error }));
    }
    if (this.queue.length > 0) setImmediate(() => void this.flush());
    else this.flushing = false;
    try {
      const outcomes = 'synced' in committed ? await committed.synced : committed;
      batch.forEach((item, i) => {
        const outcome = outcomes[i];
        if (outcome?.ok) item.resolve(outcome.value);
        else item.reject(outcome?.error);
      });
    } finally {
      this.unanswered--;
      if (!this.flushing && this.unanswered === 0) for (const wake of this.idle.splice(0)) wake();
    }
  }
}

const OUTCOME_UNKNOWN = 'committed, but its WAL sync failed: the write may or may not be on disk';

/**
 * Group commit for SQLite (docs/decisions/0026-sqlite-group-commit.md): the writes of a turn
 * share one transaction on the one connection, which is each write's `Tx`, each in a savepoint
 * of its own (one that fails is rolled back alone), and one fsync. The commit does not sync
 * (synchronous=NORMAL): `sync` does, off the event loop (0029-wal-sync-off-the-event-loop.md),
 * and each caller is answered only after it, so nothing is acknowledged before it is on disk.
 * A commit is visible to readers from the moment it is made. A sync that fails comes after
 * COMMIT: the batch's callers get an OutcomeUnknownError, never "nothing was changed", and every
 * later write is refused (WriteRefusedError 'failing') until the process restarts
 * (docs/decisions/0003-outcome-unknown.md).
 */
export class GroupCommit extends WriteBatches {
  /** The first failed sync's error, once one failed: the writer is fenced. */
  private failure: { error: unknown } | undefined;
  /** The last sync asked for: the next one starts once it has settled (one at a time). */
  private lastSync: Promise<void> = Promise.resolve();
  /** A sync asked for that has not started yet: what commits meanwhile is covered by it too. */
  private nextSync: Promise<void> | undefined;
  /** What each batch's `Tx` is lent with: the database's id clock, and a runner for hot
   * queries directly on the batch's connection, through the prepared statements. */
  private readonly lent: Lent;
  /** Prepared once: `exec` would compile them again for every write. */
  private readonly savepoint: SqliteDatabase.Statement;
  private readonly release: SqliteDatabase.Statement;

  /**
   * @param db The Kysely handle over `statements`, itself over `sqlite`.
   * @param sqlite The connection: `savepoint` and `release` run on it directly, not through
   *   the query builder.
   * @param ids The database's id clock, lent with every batch's `Tx`.
   */
  constructor(
    private readonly db: Db,
    sqlite: SqliteDatabase.Database,
    statements: SqliteStatements,
    /** Makes what was committed durable (the WAL's fdatasync), off the event loop. */
    private readonly sync: () => Promise<void> = async () => {},
    ids: IdClock = new IdClock(),
  ) {
    super();
    this.savepoint = sqlite.prepare('savepoint write');
    this.release = sqlite.prepare('release write');
    this.lent = {
      ids,
      direct: {
        all: (text, parameters) => {
          const statement = statements.prepare(text);
          if (statement.reader) return statement.all(parameters);
          statement.run(parameters);
          return [];
        },
      },
    };
  }

  /** One write in its savepoint; a failure that took the whole transaction fails the batch. */
  private async attempt(connection: Db, tx: Tx, item: Pending): Promise<Outcome> {
    this.savepoint.run();
    try {
      const value = await item.work(tx);
      this.release.run();
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

  protected async commit(batch: Pending[]): Promise<Outcome[] | Unsynced> {
    // Queued before a sync failed: refused before anything of them was done.
    if (this.failure) return batch.map(() => ({ ok: false, error: this.refused() }));
    const outcomes: Outcome[] = [];
    await this.db.connection().execute(async (connection) => {
      // The work's handle is the connection itself, typed as a Tx, lent with what hot
      // queries run directly through.
      const tx = lendTx(connection, this.lent);
      // IMMEDIATE: the write lock is taken once, up front, so a lock held by another
      // process is waited for (busy_timeout) once per batch, not once per write.
      await sql`begin immediate`.execute(connection);
      try {
        for (const item of batch) outcomes.push(await this.attempt(connection, tx, item));
        await sql`commit`.execute(connection);
      } catch (error) {
        await sql`rollback`.execute(connection).catch(() => {});
        throw error;
      }
    });
    // The commit wrote the WAL (synchronous=NORMAL); the sync runs on libuv's thread pool
    // while the event loop serves requests, and the next batch may commit. A write stored and
    // seen but not known to be on disk is answered as unconfirmed.
    return {
      synced: this.syncCommitted().then(
        () => outcomes,
        (error: unknown) => unconfirmed(outcomes, OUTCOME_UNKNOWN, error),
      ),
    };
  }

  /**
   * The sync that makes what is committed now durable. One runs at a time, in commit order, and
   * the batches that commit while one runs share the next: with two at once on one file, an
   * earlier batch's sync could succeed with its frames lost (decision 0003).
   */
  private syncCommitted(): Promise<void> {
    if (this.nextSync) return this.nextSync;
    const start = () => {
      if (this.nextSync === next) this.nextSync = undefined;
      return this.syncNow();
    };
    const next = this.lastSync.then(start, start);
    this.nextSync = next;
    this.lastSync = next;
    return next;
  }

  private async syncNow(): Promise<void> {
    // After a failed sync, a later one proves nothing of the frames before it (decision 0003).
    if (this.failure) throw this.failure.error;
    try {
      await this.sync();
    } catch (error) {
      this.failure ??= { error };
      throw error;
    }
  }

  protected override refused(): WriteRefusedError | undefined {
    return this.failure && new WriteRefusedError('failing', { cause: this.failure.error });
  }
}
