/**
 * The SQLite files are their owner's alone (docs/decisions/0068-fail-closed-and-private-files.md):
 * a folder made 0700, the database and its -wal and -shm 0600, under the usual umask (022) of
 * this test process. test/process/private-files.test.ts starts the server itself.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import { buildApp } from '../src/app.js';
import { run } from '../src/cli/main.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/store/database.js';
import { CHEAP_HASHES } from './helpers.js';

const root = mkdtempSync(join(tmpdir(), 'animal-store-private-'));
after(() => rmSync(root, { recursive: true, force: true }));

const modeOf = (path: string) => (statSync(path).mode & 0o7777).toString(8);

describe('private data files', () => {
  it('makes a fresh data folder 0700, and the database, its -wal and -shm 0600 (the app)', async () => {
    const folder = join(root, 'app', 'data');
    const file = join(folder, 'animal-store.db');
    const lines: string[] = [];
    const app = await buildApp({
      config: loadConfig({
        DATABASE_URL: `sqlite:${file}`,
        LOG_LEVEL: 'warn',
        DEMO_ACCOUNT: 'false',
        ...CHEAP_HASHES,
      }),
      startLater: true,
      logStream: { write: (line) => lines.push(line) },
    });
    try {
      await app.database.schema.migrate();
      app.lifecycle.serve();
      const made = await app.inject({
        method: 'POST',
        url: '/v1/accounts',
        payload: { email: 'private@example.com', password: 'a long enough password' },
      });
      assert.equal(made.statusCode, 201, made.body);
      assert.equal(modeOf(join(root, 'app')), '700', 'a parent it made');
      assert.equal(modeOf(folder), '700');
      for (const suffix of ['', '-wal', '-shm']) assert.equal(modeOf(file + suffix), '600', suffix);
      assert.deepEqual(lines, [], 'nothing to warn of');
    } finally {
      await app.close();
    }
  });

  it('makes them so from the CLI too', async () => {
    const folder = join(root, 'cli', 'data');
    const file = join(folder, 'animal-store.db');
    const migrated = await run(['migrate'], {
      DATABASE_URL: `sqlite:${file}`,
      LOG_LEVEL: 'silent',
    });
    assert.equal(migrated.code, 0, migrated.out);
    assert.equal(modeOf(folder), '700');
    assert.equal(modeOf(file), '600');
  });

  it('tightens the files an earlier run left open, and warns of a folder it did not make', async () => {
    const folder = join(root, 'earlier');
    mkdirSync(folder);
    chmodSync(folder, 0o755);
    const file = join(folder, 'store.db');
    // Another connection holds the database open, as the earlier code made it: every file 0644.
    const earlier = new SqliteDatabase(file);
    earlier.pragma('journal_mode = WAL');
    earlier.exec('create table t (x integer)');
    earlier.exec('insert into t values (1)');
    for (const suffix of ['', '-wal', '-shm']) chmodSync(file + suffix, 0o644);
    const warnings: string[] = [];
    const database = openDatabase(`sqlite:${file}`, { warn: (line) => warnings.push(line) });
    try {
      for (const suffix of ['', '-wal', '-shm']) assert.equal(modeOf(file + suffix), '600', suffix);
      assert.equal(modeOf(folder), '755', 'a folder that exists is left as it is');
      assert.equal(warnings.length, 1, warnings.join('\n'));
      assert.match(warnings[0] ?? '', /open to other users \(mode 755\).*chmod 700 /);
      assert.ok(warnings[0]?.includes(folder));
    } finally {
      await database.close();
      earlier.close();
    }
  });

  it('says nothing of a shared folder with the sticky bit (/tmp), and keeps its files private', async () => {
    const folder = join(root, 'sticky');
    mkdirSync(folder);
    chmodSync(folder, 0o1777);
    const file = join(folder, 'store.db');
    const warnings: string[] = [];
    const database = openDatabase(`sqlite:${file}`, { warn: (line) => warnings.push(line) });
    try {
      await database.schema.migrate();
      assert.deepEqual(warnings, []);
      for (const suffix of ['', '-wal', '-shm']) assert.equal(modeOf(file + suffix), '600', suffix);
    } finally {
      await database.close();
    }
  });
});
