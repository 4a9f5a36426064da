import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';

/**
 * The SQLite driver survives its statements being collected (issue 32). better-sqlite3 12 on
 * Node 24 aborted the process (`Assertion failed: (env) != nullptr` in `Statement::~Statement()`,
 * from `node::ObjectWrap`'s destructor) when the GC freed a statement, in 2 to 4 starts of the
 * service out of 6. This is the loop the issue describes: thousands of distinct statements, a
 * young generation of 1 MB, collections between batches. (Run by hand against better-sqlite3
 * 12.11.1 built for Node 24.21.0, it did not abort: the exact trigger is not reproduced yet, see
 * docs/decisions/0017-node-lines.md.) A crash kills the process, so it runs in a child of its own.
 */

const dir = mkdtempSync(join(tmpdir(), 'animal-store-sqlite-gc-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// Plain JavaScript, so the child starts without a loader. Statements are prepared on two
// databases opened the way the service opens its own (a file, WAL); some are kept a while so
// that they reach the old generation, the rest are garbage at once. Each batch closes and reopens
// the second database, leaving its statements to be collected after their database is closed.
const script = `
import Database from 'better-sqlite3';
const file = process.argv[1];
const open = () => {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  return db;
};
const db = open();
db.exec('CREATE TABLE IF NOT EXISTS pets (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER)');
const insert = db.prepare('INSERT INTO pets (name, n) VALUES (?, ?)');
db.transaction(() => { for (let i = 0; i < 200; i++) insert.run('pet ' + i, i); })();
let kept = [];
let rows = 0;
for (let batch = 0; batch < 40; batch++) {
  const other = open();
  for (let i = 0; i < 100; i++) {
    const k = batch * 100 + i;
    const a = db.prepare('SELECT id, name, n + ' + k + ' AS k FROM pets WHERE id > ? LIMIT 5');
    rows += a.all(i).length;
    const b = other.prepare('SELECT count(*) + ' + k + ' AS c FROM pets WHERE n < ?');
    rows += b.get(i) ? 1 : 0;
    if (i % 10 === 0) kept.push(a, b);
  }
  other.close();
  if (batch % 4 === 3) kept = [];
  globalThis.gc({ type: batch % 2 ? 'major' : 'minor' });
}
db.close();
kept = [];
globalThis.gc();
console.log('statements prepared: 8000, rows read: ' + rows);
`;

describe('SQLite statements collected under load', () => {
  it('prepares thousands of statements with collections between batches and exits 0', async () => {
    const child = spawn(
      process.execPath,
      [
        '--max-semi-space-size=1',
        '--expose-gc',
        '--input-type=module',
        '-e',
        script,
        join(dir, 'gc.db'),
      ],
      { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += String(chunk);
    });
    child.stderr.on('data', (chunk) => {
      out += String(chunk);
    });
    const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
    assert.equal(signal, null, `killed by ${signal}:\n${out}`);
    assert.equal(code, 0, out);
    assert.match(out, /statements prepared: 8000/);
  });
});
