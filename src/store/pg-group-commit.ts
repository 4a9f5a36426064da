import { Kysely, PostgresDialect, type PostgresPoolClient } from 'kysely';
import type pg from 'pg';
import { type Outcome, type Pending, unconfirmed, WriteBatches } from './group-commit.js';
import { lendTx, type NumberedTable, type NumberSource, type Tx } from './handles.js';
import type { IdClock } from './id-clock.js';
import { codeOf, storeTrouble } from './store-errors.js';
import type { Tables } from './tables.js';

/** Statements a write must not send: the batch owns its transaction. */
const TRANSACTION_CONTROL = /^\s*(begin|start\s+transaction|commit|end|rollback|abort)\s*;?\s*$/i;

/**
 * COMMIT was sent and its answer lost with the connection: the server may have committed or
 * not. Carries the writes' outcomes as they were before it.
 */
class LostCommit extends Error {
  constructor(
    readonly lost: unknown,
    readonly outcomes: Outcome[],
  ) {
    super('the answer to COMMIT was lost with its connection');
  }
}

/** A COMMIT that failed this way may have been carried out: the connection went, not the
 * transaction (an error the server answered, such as a deferred constraint, is a rollback). */
const answerLost = (error: unknown) => storeTrouble(error) === 'unreachable';

const settle = <T>(work: Promise<T>): Promise<Outcome<T>> =>
  work.then(
    (value) => ({ ok: true, value }),
    (error: unknown) => ({ ok: false, error }),
  );

/**
 * Group commit for PostgreSQL (docs/decisions/0028-postgres-group-commit.md): the writes that
 * arrive while a batch commits share the next one's transaction, on one pipelined connection;
 * each caller is answered only after its COMMIT. Blind writes (WriteOptions.blind) run side by
 * side; should one fail, or a write swallow a failure, the batch is rolled back and run again
 * one write at a time, each in its savepoint, so a blind write may run twice, only its last run
 * counting. Other writes always run alone. A COMMIT whose answer is lost may have been carried
 * out: its callers get an OutcomeUnknownError, never "nothing was changed"
 * (docs/decisions/0003-outcome-unknown.md).
 */
export class PgGroupCommit extends WriteBatches implements NumberSource {
  /** The connection of the batch in progress, which every write's queries go to. */
  private client: pg.PoolClient | undefined;
  /** The handle writes are given: each of its queries runs on the batch's connection. */
  private readonly tx: Tx;
  /**
   * The id counters the batch in progress holds (WriteOptions.numbersFor), by account: read
   * and locked in its first step, moved on in memory as its writes take numbers, and written
   * back once, before COMMIT (one row version per account and batch, not one per insert).
   */
  private counters = new Map<string, Counters>();
  /**
   * Hot writes' SQL, by text: the name each is prepared under on the connection (named by
   * src/store/prepared.ts as they first run). As many as the code has prepared writes.
   */
  private readonly serverStatements = new Map<string, string>();

  /**
   * @param pool Connections with `pipeline: true`; one at a time is used.
   * @param ids The database's id clock, lent with the writes' `Tx`.
   */
  constructor(
    private readonly pool: pg.Pool,
    ids: IdClock,
  ) {
    super();
    const lent: PostgresPoolClient = {
      query: ((text: string, parameters: unknown[]) => this.query(text, parameters)) as never,
      // The batch releases its connection, not the queries made on it.
      release: () => {},
    };
    this.tx = lendTx(
      new Kysely<Tables>({
        dialect: new PostgresDialect({
          pool: { connect: async () => lent, end: async () => {}, options: {} },
        }),
      }),
      { ids, numbers: this, serverStatements: this.serverStatements },
    );
  }

  /** The first of `count` numbers of the account's `table` taken for the batch in progress. */
  take(accountId: string, table: NumberedTable, count: number): number {
    const counters = this.counters.get(accountId);
    if (counters === undefined) {
      throw new Error(
        'a numbered insert on PostgreSQL runs in a write that says numbersFor: its account',
      );
    }
    const first = counters[table] + 1;
    counters[table] += count;
    counters.moved = true;
    return first;
  }

  /** As WriteBatches.close, then closes the connection. */
  override async close(): Promise<void> {
    await super.close();
    if (!this.pool.ended) await this.pool.end();
  }

  private query(text: string, parameters: unknown[]): Promise<pg.QueryResult> {
    if (TRANSACTION_CONTROL.test(text)) {
      return Promise.reject(
        new Error('a write in a group commit must not begin or end a transaction'),
      );
    }
    if (!this.client) return Promise.reject(new Error('no batch in progress'));
    const name = this.serverStatements.get(text);
    return name
      ? this.client.query({ name, text, values: parameters })
      : this.client.query(text, parameters);
  }

  protected async commit(batch: Pending[]): Promise<Outcome[]> {
    let client: pg.PoolClient | undefined;
    try {
      client = await this.pool.connect();
      this.client = client;
      const outcomes = await this.transact(client, batch);
      client.release();
      return outcomes;
    } catch (error) {
      // The connection, its state unknown, is dropped.
      client?.release(error instanceof Error ? error : true);
      if (error instanceof LostCommit)
        return unconfirmed(error.outcomes, error.message, error.lost);
      throw error;
    } finally {
      this.client = undefined;
      this.counters = new Map();
    }
  }

  /** Runs the batch in one transaction and commits it; each write's outcome, in order. */
  private async transact(client: pg.PoolClient, batch: Pending[]): Promise<Outcome[]> {
    // WriteOptions.blind: run beside the others, pipelined.
    const together = batch.filter((item) => item.options?.blind === true);
    const alone = batch.filter((item) => item.options?.blind !== true);
    // BEGIN goes out first, and the statements right behind it, unanswered yet (but for the
    // counters' numbers, which the writes take from memory).
    const begun = settle(client.query('begin'));
    const locked = await settle(this.lockCounters(client, batch));
    const results = await Promise.all(together.map((item) => settle(item.work(this.tx))));
    const began = await begun;
    if (!began.ok) throw began.error;
    if (!locked.ok) throw locked.error;
    if (results.every((result) => result.ok)) {
      const outcomes = new Map<Pending, Outcome>();
      for (const [i, item] of together.entries()) outcomes.set(item, results[i] as Outcome);
      try {
        for (const item of alone) outcomes.set(item, await this.attempt(client, item));
      } catch (error) {
        // A write above swallowed its statement's failure: the transaction is aborted.
        if (!inFailedTransaction(error)) throw error;
      }
      if (outcomes.size === batch.length) {
        // The counters and COMMIT go out together (one round trip, not two). Saving them
        // fails only in a transaction a write aborted, and COMMIT then rolls it back, without
        // an error of its own.
        const [saved, committed] = await Promise.all([
          settle(this.saveCounters(client)),
          settle(client.query('commit')),
        ]);
        const inOrder = batch.map((item) => outcomes.get(item) as Outcome);
        // The server answered the counters' update with an error (a FATAL as it was terminated,
        // say): it stopped there, before COMMIT, which was rolled back or never read.
        if (!saved.ok && !inFailedTransaction(saved.error) && serverSaid(saved.error)) {
          throw saved.error;
        }
        if (!committed.ok && answerLost(committed.error)) {
          throw new LostCommit(committed.error, inOrder);
        }
        if (!saved.ok && !inFailedTransaction(saved.error)) throw saved.error;
        if (!committed.ok) throw committed.error;
        if (saved.ok && committed.value.command === 'COMMIT') return inOrder;
      } else await client.query('rollback');
    } else await client.query('rollback');
    // A statement failed and PostgreSQL aborted the transaction: again, one write at a time.
    await client.query('begin');
    await this.lockCounters(client, batch);
    const outcomes: Outcome[] = [];
    for (const item of batch) outcomes.push(await this.attempt(client, item));
    await this.saveCounters(client);
    const committed = await settle(client.query('commit'));
    if (!committed.ok) {
      throw answerLost(committed.error)
        ? new LostCommit(committed.error, outcomes)
        : committed.error;
    }
    if (committed.value.command !== 'COMMIT')
      throw new Error('the batch was rolled back at commit');
    return outcomes;
  }

  /**
   * Locks the id counters of the accounts the batch numbers for, in order, creating those
   * missing: the first thing the transaction does, so whatever else it waits for, it holds no
   * counter another batch could be waiting for out of order.
   */
  private async lockCounters(client: pg.PoolClient, batch: Pending[]): Promise<void> {
    const accounts = [...new Set(batch.flatMap((item) => item.options?.numbersFor || []))].sort();
    this.counters = new Map();
    if (accounts.length === 0) return;
    // One pass in order: DO UPDATE locks each row, the existing and the new alike.
    const { rows } = await client.query<Omit<Counters, 'moved'> & { account_id: string }>(
      `insert into id_counters (account_id)
       select account_id from unnest($1::text[]) as a (account_id) order by account_id
       on conflict (account_id) do update set account_id = excluded.account_id
       returning account_id, categories, pets, orders`,
      [accounts],
    );
    for (const { account_id, categories, pets, orders } of rows) {
      this.counters.set(account_id, {
        categories: Number(categories),
        pets: Number(pets),
        orders: Number(orders),
        moved: false,
      });
    }
  }

  /** Writes back the counters the batch moved on: the last thing before its COMMIT. */
  private async saveCounters(client: pg.PoolClient): Promise<void> {
    const moved = [...this.counters].filter(([, counters]) => counters.moved);
    if (moved.length === 0) return;
    await client.query(
      `update id_counters c set categories = v.categories, pets = v.pets, orders = v.orders
       from unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[])
         as v (account_id, categories, pets, orders)
       where c.account_id = v.account_id`,
      [
        moved.map(([account]) => account),
        moved.map(([, c]) => c.categories),
        moved.map(([, c]) => c.pets),
        moved.map(([, c]) => c.orders),
      ],
    );
  }

  /** One write in its savepoint: rolled back alone if it fails. */
  private async attempt(client: pg.PoolClient, item: Pending): Promise<Outcome> {
    await client.query('savepoint write');
    // The numbers a write took go back with it when it is rolled back (no gap).
    const counters = new Map([...this.counters].map(([account, c]) => [account, { ...c }]));
    const outcome = await settle(item.work(this.tx));
    if (outcome.ok) {
      try {
        await client.query('release savepoint write');
        return outcome;
      } catch (error) {
        // The write swallowed its statement's error (createPet answers unknown_category): the
        // transaction is aborted all the same, and only the savepoint brings it back.
        if (!inFailedTransaction(error)) throw error;
      }
    }
    this.counters = counters;
    await client.query('rollback to savepoint write');
    await client.query('release savepoint write');
    return outcome;
  }
}

/** An account's id counters as a batch holds them. */
interface Counters extends Record<NumberedTable, number> {
  /** Moved on by the batch: written back before its COMMIT. */
  moved: boolean;
}

/** The error is the server's answer (it has an SQLSTATE), not the connection's loss. */
function serverSaid(error: unknown): boolean {
  return /^[0-9A-Z]{5}$/.test(codeOf(error) ?? '');
}

/** SQLSTATE 25P02: the transaction was aborted by an earlier statement's failure. (A
 * pipelined connection reports its transaction status only after the next answer, so the
 * status alone cannot tell.) */
function inFailedTransaction(error: unknown): boolean {
  return codeOf(error) === '25P02';
}
