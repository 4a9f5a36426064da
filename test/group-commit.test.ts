import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { createCategory } from '../src/catalogue/categories.js';
import { createPet } from '../src/catalogue/pets.js';
import { insertPet, listPets } from '../src/catalogue/pets-repository.js';
import { systemClock } from '../src/clock.js';
import { type Database, openDatabase, type Tx } from '../src/store/database.js';
import { GroupCommit, OutcomeUnknownError, WriteRefusedError } from '../src/store/group-commit.js';
import { sqliteStatements } from '../src/store/sqlite-statements.js';
import type { Tables } from '../src/store/tables.js';
import { sqliteDatabaseUrl, storeWithAccount, testDatabaseUrl, until } from './helpers.js';

// Database.write on the real stores: group commit, where writes started together share one
// transaction: SQLite's GroupCommit, and PostgreSQL's PgGroupCommit (when TEST_DATABASE_URL is
// set), whose blind writes are pipelined and, should one fail, run again one by one.
const targets = [{ name: 'sqlite', url: sqliteDatabaseUrl }];
if (process.env.TEST_DATABASE_URL) targets.push({ name: 'postgres', url: testDatabaseUrl });

for (const target of targets) {
  describe(`writes on ${target.name}`, () => {
    let database: Database;
    let url: string;
    let cleanup: () => void;
    let accountId: string;
    let categoryId: number;

    before(async () => {
      const made = target.url();
      ({ url, cleanup } = made);
      ({ database, accountId } = await storeWithAccount(url));
      categoryId = (
        await database.write((tx) => createCategory(tx, systemClock, accountId, 'Dogs'), {
          numbersFor: accountId,
        })
      ).id;
    });
    after(async () => {
      await database.close();
      cleanup();
    });

    const names = async () =>
      (await listPets(database.reader, accountId, { afterId: 0, take: 1000 }))
        .map((p) => p.name)
        .sort();
    const pet = (tx: Tx, name: string, category = categoryId) =>
      createPet(tx, systemClock, accountId, { name, categoryId: category });
    // accountId is known once the suite's `before` ran.
    const blind = () => ({ blind: true, numbersFor: accountId });
    /** How each of the writes, started together, ended. */
    const settled = async (writes: Array<Promise<unknown>>) =>
      (await Promise.allSettled(writes)).map((o) => o.status);

    it('gives each created pet the id the database stored it under', async () => {
      const created = await Promise.all(
        ['Id 1', 'Id 2', 'Id 3'].map((name) => database.write((tx) => pet(tx, name), blind())),
      );
      const stored = await listPets(database.reader, accountId, { afterId: 0, take: 1000 });
      for (const result of created) {
        assert.ok(result.ok);
        const row = stored.find((p) => p.id === result.value.id);
        assert.equal(row?.name, result.value.name);
      }
    });

    it('refuses a blind write whose statement fails, and only it', async () => {
      const before = await names();
      const results = await Promise.all([
        database.write((tx) => pet(tx, 'Kept 1'), blind()),
        database.write((tx) => pet(tx, 'Refused', 424242), blind()),
        database.write((tx) => pet(tx, 'Kept 2'), blind()),
      ]);
      assert.deepEqual(
        results.map((r) => r.ok),
        [true, false, true],
      );
      assert.deepEqual(await names(), [...before, 'Kept 1', 'Kept 2'].sort());
    });

    it('refuses a blind write whose statement throws, and only it', async () => {
      const before = await names();
      const at = new Date().toISOString();
      const row = {
        account_id: accountId,
        category_id: categoryId,
        status: 'available' as const,
      };
      assert.deepEqual(
        await settled([
          database.write((tx) => pet(tx, 'Beside 1'), blind()),
          // NOT NULL: the error reaches the batch (createPet answers only unknown categories).
          database.write(
            (tx) => insertPet(tx, { ...row, name: null as never, created_at: at, updated_at: at }),
            blind(),
          ),
          database.write((tx) => pet(tx, 'Beside 2'), blind()),
        ]),
        ['fulfilled', 'rejected', 'fulfilled'],
      );
      assert.deepEqual(await names(), [...before, 'Beside 1', 'Beside 2'].sort());
    });

    // SQLite's batch fails as a whole where PostgreSQL's runs again, one write at a time.
    const batched = { skip: target.name !== 'sqlite' && 'PostgreSQL: see its own tests below' };
    const postgres = { skip: target.name !== 'postgres' && 'SQLite: see its own tests above' };

    it('rolls back a write that fails after changing rows, alone, even when it said blind', async () => {
      const before = await names();
      // Every write has a savepoint of its own: the others of its batch commit.
      assert.deepEqual(
        await settled([
          database.write((tx) => pet(tx, 'Plain'), blind()),
          database.write(async (tx) => {
            await pet(tx, 'Half done');
            throw new Error('failed after its insert');
          }, blind()),
          database.write(
            async (tx) => {
              await pet(tx, 'Also half done');
              throw new Error('failed after its insert');
            },
            { numbersFor: accountId },
          ),
        ]),
        ['fulfilled', 'rejected', 'rejected'],
      );
      assert.deepEqual(await names(), [...before, 'Plain'].sort());
    });

    it(
      "takes the writes started in one turn into one batch, and the next turn's into another",
      batched,
      async () => {
        // A second connection sees only what is committed.
        const reader = new SqliteDatabase(url.slice('sqlite:'.length), { readonly: true });
        const committed = (name: string) =>
          reader.prepare('select count(*) from pets where name = ?').pluck().get(name);
        try {
          const first = database.write((tx) => pet(tx, 'First of the turn'), blind());
          let seenBySameTurn: unknown;
          let seenByNextTurn: unknown;
          // Later in the same turn (a request handled after the first in one check phase).
          const sameTurn = Promise.resolve().then(() =>
            database.write(async (tx) => {
              seenBySameTurn = committed('First of the turn');
              return pet(tx, 'Same turn');
            }, blind()),
          );
          const nextTurn = new Promise((resolve, reject) =>
            setImmediate(() =>
              database
                .write(async (tx) => {
                  seenByNextTurn = committed('First of the turn');
                  return pet(tx, 'Next turn');
                }, blind())
                .then(resolve, reject),
            ),
          );
          await Promise.all([first, sameTurn, nextTurn]);
          // The first write was not committed yet when the same turn's ran: one transaction;
          // it was when the next turn's ran: the batch had gone (and waits for its sync).
          assert.equal(seenBySameTurn, 0);
          assert.equal(seenByNextTurn, 1);
          for (const name of ['First of the turn', 'Same turn', 'Next turn']) {
            assert.equal(committed(name), 1);
          }
        } finally {
          reader.close();
        }
      },
    );

    it(
      'fails the batch, not just the write, when a write ends the transaction',
      batched,
      async () => {
        const before = await names();
        assert.deepEqual(
          await settled([
            database.write((tx) => pet(tx, 'Before the end'), blind()),
            database.write(async (tx) => {
              // As SQLite does by itself on some errors (disk full): the transaction is gone.
              await sql`rollback`.execute(tx);
              throw new Error('the transaction was rolled back');
            }, blind()),
            database.write((tx) => pet(tx, 'After the end'), blind()),
          ]),
          ['rejected', 'rejected', 'rejected'],
        );
        assert.deepEqual(await names(), before);
        // A write that swallows the error and answers: the batch fails all the same.
        assert.deepEqual(
          await settled([
            database.write((tx) => pet(tx, 'Before the end'), blind()),
            database.write(async (tx) => {
              await sql`rollback`.execute(tx);
            }, blind()),
            database.write((tx) => pet(tx, 'After the end'), blind()),
          ]),
          ['rejected', 'rejected', 'rejected'],
        );
        assert.deepEqual(await names(), before);
        // And the next batch commits as usual.
        assert.ok((await database.write((tx) => pet(tx, 'Next batch'), blind())).ok);
        assert.deepEqual(await names(), [...before, 'Next batch'].sort());
      },
    );

    it(
      'rolls back a write that fails after changing rows, alone, the others committed',
      postgres,
      async () => {
        const before = await names();
        assert.deepEqual(
          await settled([
            database.write((db) => pet(db, 'Plain'), blind()),
            database.write(async (db) => {
              await pet(db, 'Half done');
              throw new Error('failed after its insert');
            }, blind()),
            database.write(async (db) => {
              await pet(db, 'Also half done');
              throw new Error('failed after its insert');
            }),
            database.write(async (db) => {
              await pet(db, 'Two statements, 1');
              return pet(db, 'Two statements, 2');
            }),
          ]),
          ['fulfilled', 'rejected', 'rejected', 'fulfilled'],
        );
        assert.deepEqual(
          await names(),
          [...before, 'Plain', 'Two statements, 1', 'Two statements, 2'].sort(),
        );
      },
    );

    it(
      'answers a write that swallowed its failure as if alone, beside writes of two statements',
      postgres,
      async () => {
        const before = await names();
        const results = await Promise.all([
          database.write((db) => pet(db, 'Beside a refusal 1'), blind()),
          // createPet answers unknown_category from the failed insert: PostgreSQL has aborted
          // the transaction all the same.
          database.write((db) => pet(db, 'Refused', 424242), blind()),
          database.write(async (db) => {
            await pet(db, 'Beside a refusal 2');
            return pet(db, 'Beside a refusal 3');
          }),
        ]);
        assert.deepEqual(
          results.map((r) => r.ok),
          [true, false, true],
        );
        assert.deepEqual(
          await names(),
          [...before, 'Beside a refusal 1', 'Beside a refusal 2', 'Beside a refusal 3'].sort(),
        );
      },
    );

    it(
      'commits the writes started together in one transaction, then answers',
      postgres,
      async () => {
        // Another connection sees only what is committed.
        const outside = openDatabase(url, { poolSize: 1 });
        const committed = async (name: string) =>
          (
            await outside.reader
              .selectFrom('pets')
              .select('id')
              .where('account_id', '=', accountId)
              .where('name', '=', name)
              .execute()
          ).length;
        try {
          let seenBeforeCommit: number | undefined;
          const answered: string[] = [];
          const writes = [
            database.write((db) => pet(db, 'Together 1'), blind()),
            database.write(async (db) => {
              const made = await pet(db, 'Together 2');
              seenBeforeCommit = await committed('Together 2');
              return made;
            }),
          ].map((write, i) =>
            write.then(async (result) => {
              answered.push(`${i}: ${await committed(`Together ${i + 1}`)}`);
              return result;
            }),
          );
          await Promise.all(writes);
          // Not visible to others while the batch ran; committed by the time each was answered.
          assert.equal(seenBeforeCommit, 0);
          assert.deepEqual(answered.sort(), ['0: 1', '1: 1']);
        } finally {
          await outside.close();
        }
      },
    );

    it('refuses a write that begins or ends the transaction, and only it', postgres, async () => {
      const before = await names();
      assert.deepEqual(
        await settled([
          database.write((db) => pet(db, 'Before the end'), blind()),
          database.write(async (db) => {
            await sql`commit`.execute(db);
          }, blind()),
          database.write(async (db) => {
            // A Tx has no transaction() (it does not compile); at run time it is refused too.
            // @ts-expect-error
            await db.transaction().execute((trx) => pet(trx, 'In a transaction of its own'));
          }),
          database.write((db) => pet(db, 'After the end'), blind()),
        ]),
        ['fulfilled', 'rejected', 'rejected', 'fulfilled'],
      );
      assert.deepEqual(await names(), [...before, 'After the end', 'Before the end'].sort());
    });

    it(
      'fails the whole batch when its connection is lost, and commits the next one',
      postgres,
      async () => {
        const before = await names();
        const outcomes = await settled([
          database.write((db) => pet(db, 'Lost 1'), blind()),
          database.write(async (db) => {
            await pet(db, 'Lost 2');
            // The server ends the batch's connection, as a restart or a failover would.
            await sql`select pg_terminate_backend(pg_backend_pid())`.execute(db);
          }),
        ]);
        assert.deepEqual(outcomes, ['rejected', 'rejected']);
        assert.deepEqual(await names(), before);
        assert.ok((await database.write((db) => pet(db, 'Next batch'), blind())).ok);
        assert.deepEqual(await names(), [...before, 'Next batch'].sort());
      },
    );
  });
}

// SQLite's commit writes the WAL without syncing it (synchronous=NORMAL); group commit syncs
// it off the event loop, one sync at a time, and answers a batch's writers only after that
// sync. Each test has a GroupCommit of its own on a real file, whose syncs it settles itself.
describe('SQLite group commit and its sync', () => {
  interface Held {
    group: GroupCommit;
    syncs: Array<{ resolve: () => void; reject: (error: Error) => void }>;
    note: (text: string) => Promise<string>;
    stored: () => string;
    close: () => void;
  }
  const opened: Held[] = [];
  after(() => {
    for (const held of opened) held.close();
  });

  function held(): Held {
    const made = sqliteDatabaseUrl();
    const path = made.url.slice('sqlite:'.length);
    const sqlite = new SqliteDatabase(path);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    sqlite.exec("create table notes (text text not null check (text <> 'refused'))");
    const reader = new SqliteDatabase(path, { readonly: true });
    const statements = sqliteStatements(sqlite);
    const db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: statements }) });
    const syncs: Held['syncs'] = [];
    const group = new GroupCommit(
      db,
      sqlite,
      statements,
      () => new Promise<void>((resolve, reject) => syncs.push({ resolve, reject })),
    );
    const it: Held = {
      group,
      syncs,
      note: (text) =>
        group.run(async (tx) => {
          await sql`insert into notes (text) values (${text})`.execute(tx);
          return text;
        }),
      stored: () =>
        (reader.prepare('select text from notes order by text').pluck().all() as string[]).join(),
      close: () => {
        reader.close();
        sqlite.close();
        made.cleanup();
      },
    };
    opened.push(it);
    return it;
  }

  /** Records when a write is answered, and how. */
  const watched = <T>(write: Promise<T>) => {
    const seen: { outcome?: 'resolved' | 'rejected'; value?: T; error?: unknown } = {};
    const done = write.then(
      (value) => Object.assign(seen, { outcome: 'resolved', value }),
      (error: unknown) => Object.assign(seen, { outcome: 'rejected', error }),
    );
    return { seen, done };
  };

  it('answers a batch once its commit is synced; the next commits meanwhile, its sync after', async () => {
    const { syncs, note, stored } = held();
    const first = watched(note('a'));
    await until(() => syncs.length === 1, 'the first sync');
    assert.equal(stored(), 'a', 'committed');
    assert.equal(first.seen.outcome, undefined, 'answered before its sync');
    // Two batches commit while the first syncs: one sync, after the first's, covers both.
    const second = watched(note('b'));
    await until(() => stored() === 'a,b', 'the second batch to commit');
    const third = watched(note('c'));
    await until(() => stored() === 'a,b,c', 'the third batch to commit');
    await sleep(20);
    assert.equal(syncs.length, 1, 'a second sync began while the first ran');
    syncs[0]?.resolve();
    await first.done;
    assert.equal(first.seen.value, 'a');
    await until(() => syncs.length === 2, 'the sync of the batches that committed meanwhile');
    assert.equal(second.seen.outcome, undefined, 'answered before its sync');
    syncs[1]?.resolve();
    await Promise.all([second.done, third.done]);
    assert.deepEqual([second.seen.value, third.seen.value], ['b', 'c']);
    assert.equal(syncs.length, 2);
  });

  it('answers outcome unknown when the sync after COMMIT fails, then refuses every write', async () => {
    const { group, syncs, note, stored } = held();
    const [failing, refusedAlone] = [watched(note('d')), watched(note('refused'))];
    await until(() => syncs.length === 1, 'the sync');
    const meanwhile = watched(note('e'));
    await until(() => stored() === 'd,e', 'the next batch to commit');
    syncs[0]?.reject(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    await Promise.all([failing.done, refusedAlone.done, meanwhile.done]);
    // Stored and seen, not known to be on disk: neither a success nor "nothing was changed".
    assert.ok(failing.seen.error instanceof OutcomeUnknownError, String(failing.seen.error));
    assert.match(String((failing.seen.error as Error).cause), /EIO/);
    // Its own statement failed and was rolled back alone: that outcome is known.
    assert.match(String(refusedAlone.seen.error), /CHECK constraint/);
    // Committed after frames the disk may have lost: no later sync could vouch for it, and
    // none was made.
    assert.ok(meanwhile.seen.error instanceof OutcomeUnknownError, String(meanwhile.seen.error));
    assert.equal(syncs.length, 1);
    // From now on nothing is done, and the refusal says so.
    const after = await note('f').catch((error: unknown) => error);
    assert.ok(after instanceof WriteRefusedError && after.reason === 'failing', String(after));
    assert.equal(stored(), 'd,e');
    await group.close();
  });

  it('commits and answers the writes queued when it closes, waiting for their sync', async () => {
    const { group, syncs, note, stored } = held();
    const queued = ['g', 'h'].map((text) => watched(note(text)));
    let closed = false;
    const closing = group.close().then(() => {
      closed = true;
    });
    // Closing refuses what comes after it, and that changes nothing.
    const late = await note('late').catch((error: unknown) => error);
    assert.ok(late instanceof WriteRefusedError && late.reason === 'closing', String(late));
    await until(() => syncs.length === 1, 'the queued writes to commit');
    assert.equal(stored(), 'g,h');
    await sleep(20);
    assert.equal(closed, false, 'closed with a sync in flight');
    syncs[0]?.resolve();
    await closing;
    await Promise.all(queued.map((write) => write.done));
    assert.deepEqual(
      queued.map((write) => write.seen.value),
      ['g', 'h'],
    );
    await group.close(); // twice is fine
  });
});

describe('a SQLite file database', () => {
  it('commits without syncing in SQLite; group commit syncs the WAL file', async () => {
    const { url, cleanup } = sqliteDatabaseUrl();
    const database = openDatabase(url);
    try {
      await database.write(async (tx) => {
        await sql`create table notes (text text not null)`.execute(tx);
      });
      await database.write(async (tx) => {
        await sql`insert into notes (text) values ('synced')`.execute(tx);
      });
      const file = new SqliteDatabase(url.slice('sqlite:'.length), { readonly: true });
      assert.deepEqual(file.prepare('select text from notes').pluck().all(), ['synced']);
      file.close();
      // NORMAL (1): the writes above were answered after walSync's fdatasync of the WAL file
      // (a sync that failed, the file not found, would have failed them).
      const setting = await database.write(
        async (tx) => (await sql<{ synchronous: number }>`pragma synchronous`.execute(tx)).rows,
      );
      assert.deepEqual(setting, [{ synchronous: 1 }]);
    } finally {
      await database.close();
      cleanup();
    }
  });
});
