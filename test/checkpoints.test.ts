import assert from 'node:assert/strict';
import { existsSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { describe, it } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import { sql } from 'kysely';
import { openDatabase } from '../src/store/database.js';
import { checkpointOffThread } from '../src/store/sqlite-checkpoints.js';
import { sqliteDatabaseUrl } from './helpers.js';

const until = async (done: () => boolean, ms = 5_000) => {
  const start = Date.now();
  while (!done()) {
    if (Date.now() - start > ms) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
};

describe('SQLite checkpoints (docs/decisions/0063-sqlite-checkpoints-off-the-event-loop.md)', () => {
  it('copy the WAL into the database file on their own thread, long before SQLite would', async () => {
    const made = sqliteDatabaseUrl();
    const path = made.url.slice('sqlite:'.length);
    const database = openDatabase(made.url);
    try {
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
      assert.ok(
        await until(() => statSync(path).size >= before + 250 * 4000),
        `the database file is ${statSync(path).size} bytes: nothing was checkpointed`,
      );
      // Nothing was lost on the way.
      const rows = await sql<{ n: number }>`select count(*) as n from blobs`.execute(
        database.reader,
      );
      assert.equal(rows.rows[0]?.n, 250);
    } finally {
      await database.close();
      made.cleanup();
    }
  });

  it('stop with their database: once it is closed, no file of it is open', async (t) => {
    if (!existsSync('/proc/self/fd')) return t.skip('needs /proc (Linux)');
    const made = sqliteDatabaseUrl();
    const path = made.url.slice('sqlite:'.length);
    const openFiles = () =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`).startsWith(path);
        } catch {
          return false; // closed meanwhile (the listing's own)
        }
      }).length;
    const database = openDatabase(made.url);
    try {
      await database.schema.migrate();
      // The writer's connection (its database, WAL and shared memory), the reader's (the
      // first two), and the thread's (database and WAL).
      assert.ok(await until(() => openFiles() >= 7), `${openFiles()} files open`);
      await database.close();
      assert.equal(openFiles(), 0);
      // The writer closed last, and removed the WAL (a read-only connection cannot).
      assert.equal(existsSync(`${path}-wal`), false);
    } finally {
      made.cleanup();
    }
  });

  it('keep the WAL bounded under a steady write load, which they never catch up with', async () => {
    const made = sqliteDatabaseUrl();
    const path = made.url.slice('sqlite:'.length);
    const database = openDatabase(made.url);
    try {
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
    } finally {
      await database.close();
      made.cleanup();
    }
  });

  it("give the checkpoints back to SQLite's commits when the thread cannot work", async () => {
    const made = sqliteDatabaseUrl();
    const writer = new SqliteDatabase(made.url.slice('sqlite:'.length));
    const warnings: string[] = [];
    try {
      writer.pragma('journal_mode = WAL');
      const checkpoints = checkpointOffThread(writer, '/no/such/folder/store.db', {
        warn: (message) => warnings.push(message),
      });
      assert.ok(
        await until(() => writer.pragma('wal_autocheckpoint', { simple: true }) === 1000),
        'the writer does not checkpoint again',
      );
      assert.ok(warnings.some((line) => /checkpoints in its commits again/.test(line)));
      await checkpoints.close();
    } finally {
      writer.close();
      made.cleanup();
    }
  });
});
