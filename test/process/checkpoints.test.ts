import assert from 'node:assert/strict';
import { existsSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { describe, it } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import { sql } from 'kysely';
import { type Database, openDatabase } from '../../src/store/database.js';
import { checkpointOffThread } from '../../src/store/sqlite-checkpoints.js';
import { sqliteDatabaseUrl, until } from '../helpers.js';

/** A database of its own at `path`, closed and removed after `work`. */
async function withDatabase(work: (database: Database, path: string) => Promise<void>) {
  const made = sqliteDatabaseUrl();
  const database = openDatabase(made.url);
  try {
    await work(database, made.url.slice('sqlite:'.length));
  } finally {
    await database.close();
    made.cleanup();
  }
}

describe('SQLite checkpoints (docs/decisions/0063-sqlite-checkpoints-off-the-event-loop.md)', () => {
  it('copy the WAL into the database file on their own thread, long before SQLite would', () =>
    withDatabase(async (database, path) => {
      await database.write((tx) => sql`create table blobs (bytes blob not null)`.execute(tx));
      const before = statSync(path).size;
      // ~250 pages of 4 KiB: a quarter of what makes SQLite checkpoint in a commit of its own.
      for (let i = 0; i < 25; i++) {
        await database.write(async (tx) => {
          for (let j = 0; j < 10; j++) {
            await sql`insert into blobs (bytes) values (randomblob(4000))`.execute(tx);
          }
        });
      }
      await until(
        () => statSync(path).size >= before + 250 * 4000,
        'the database file to grow: nothing was checkpointed',
        5_000,
      );
      // Nothing was lost on the way.
      const rows = await sql<{ n: number }>`select count(*) as n from blobs`.execute(
        database.reader,
      );
      assert.equal(rows.rows[0]?.n, 250);
    }));

  it('stop with their database: once it is closed, no file of it is open', async (t) => {
    if (!existsSync('/proc/self/fd')) return t.skip('needs /proc (Linux)');
    await withDatabase(async (database, path) => {
      const openFiles = () =>
        readdirSync('/proc/self/fd').filter((fd) => {
          try {
            return readlinkSync(`/proc/self/fd/${fd}`).startsWith(path);
          } catch {
            return false; // closed meanwhile (the listing's own)
          }
        }).length;
      await database.schema.migrate();
      // The writer's connection (its database, WAL and shared memory), the reader's (the
      // first two), and the thread's (database and WAL).
      await until(() => openFiles() >= 7, 'the thread to open its connection', 5_000);
      await database.close();
      assert.equal(openFiles(), 0);
      // The writer closed last, and removed the WAL (a read-only connection cannot).
      assert.equal(existsSync(`${path}-wal`), false);
    });
  });

  it('keep the WAL bounded under a steady write load, which they never catch up with', () =>
    withDatabase(async (database, path) => {
      await database.write((tx) => sql`create table blobs (bytes blob not null)`.execute(tx));
      // ~80 MB of WAL frames, a commit every turn of the event loop for a few seconds: the
      // thread copies them, but only the writer starts the WAL again, and only once all are.
      let largest = 0;
      for (let round = 0; round < 400; round++) {
        await Promise.all(
          Array.from({ length: 50 }, () =>
            database.write((tx) =>
              sql`insert into blobs (bytes) values (randomblob(4000))`.execute(tx),
            ),
          ),
        );
        largest = Math.max(largest, statSync(`${path}-wal`).size);
      }
      // The writer's backstop: 4,000 pages, and what commits while it copies.
      assert.ok(largest < 24 * 1024 * 1024, `the WAL reached ${largest} bytes`);
    }));

  it("give the checkpoints back to SQLite's commits when the thread cannot work", async () => {
    const made = sqliteDatabaseUrl();
    const writer = new SqliteDatabase(made.url.slice('sqlite:'.length));
    const warnings: string[] = [];
    try {
      writer.pragma('journal_mode = WAL');
      const checkpoints = checkpointOffThread(writer, '/no/such/folder/store.db', {
        warn: (message) => warnings.push(message),
      });
      await until(
        () => writer.pragma('wal_autocheckpoint', { simple: true }) === 1000,
        'the writer to checkpoint again',
        5_000,
      );
      assert.ok(warnings.some((line) => /checkpoints in its commits again/.test(line)));
      await checkpoints.close();
    } finally {
      writer.close();
      made.cleanup();
    }
  });
});
