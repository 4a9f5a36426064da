/**
 * The server itself, started on a fresh data folder, keeps its files to its owner
 * (docs/decisions/0068-fail-closed-and-private-files.md); the in-process cases, an earlier
 * run's files and a folder that exists are in test/private-files.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { kill, startServer } from './server-process.js';

const root = mkdtempSync(join(tmpdir(), 'animal-store-private-server-'));
after(() => rmSync(root, { recursive: true, force: true }));

const modeOf = (path: string) => (statSync(path).mode & 0o7777).toString(8);

describe('the server on a fresh data folder', () => {
  it('makes the folder 0700 and the database, its -wal and -shm 0600', async () => {
    const folder = join(root, 'data');
    const file = join(folder, 'animal-store.db');
    const server = await startServer({ DATABASE_URL: `sqlite:${file}` });
    try {
      const made = await fetch(`${server.base}/v1/accounts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'files@example.com', password: 'a long enough password' }),
      });
      assert.equal(made.status, 201, await made.text());
      assert.equal(modeOf(folder), '700');
      for (const suffix of ['', '-wal', '-shm']) assert.equal(modeOf(file + suffix), '600', suffix);
      assert.doesNotMatch(server.output(), /open to other users/);
    } finally {
      await kill(server, 'SIGTERM');
    }
  });
});
