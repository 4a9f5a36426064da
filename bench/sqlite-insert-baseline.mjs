// The durable SQLite insert loop: what SQLite itself sustains of durable single-row inserts
// like the service's pet insert, with no HTTP in front, the embedded counterpart of
// bench/insert-baseline.mjs. One writer (SQLite has one), better-sqlite3 on a file of its own
// in a fresh directory beside the service's database (same file system, so the same fsync),
// WAL mode, `synchronous = FULL`: every commit is synced before it returns, the guarantee the
// service gives. One transaction per insert (autocommit), for a warm-up and then a measured
// stretch.
//
// It is the plain loop on purpose, not one committing in batches like the service's group
// commit: it is the reference a user would write with SQLite alone, and group commit (one
// transaction and one sync for the writes of a turn) is what the service does to beat it
// (docs/decisions/0026-sqlite-group-commit.md). A batched loop would measure group commit
// against itself.
//
// The rows go to `bench_inserts`, made here like the service's `pets` (its columns and
// indexes, read from the service's database) but with `id integer primary key autoincrement`
// in place of the (account_id, id) key numbered by the per-account counter: the table's tree,
// its two indexes and a counter row (sqlite_sequence for id_counters) are written by each
// insert, as by the service's; no foreign keys, as in the PostgreSQL loop.
// Prints one JSON line: { rps, p50, p99, errors } (ms).
// Usage: node bench/sqlite-insert-baseline.mjs <service's database file> <account id>
//        <category id> <warm-up s> <measured s>
import { mkdtempSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';

const [servicePath, accountId, categoryId, warmup, seconds] = process.argv.slice(2);

/** `pets` as the service made it: its columns and its indexes but the key's. */
function petsShape() {
  const service = new Database(servicePath, { readonly: true });
  try {
    const columns = service.pragma('table_xinfo(pets)').filter((c) => c.name !== 'id');
    if (columns.length === 0) throw new Error(`no pets table in ${servicePath}`);
    const indexes = service
      .pragma('index_list(pets)')
      .filter((index) => index.origin === 'c')
      .map((index) => {
        if (index.partial) throw new Error(`partial index ${index.name}: not copied here`);
        const keys = service
          .pragma(`index_xinfo(${JSON.stringify(index.name)})`)
          .filter((k) => k.key === 1)
          .map((k) => `"${k.name}"${k.desc ? ' desc' : ''}`);
        return { name: index.name, unique: index.unique === 1, keys };
      });
    return { columns, indexes };
  } finally {
    service.close();
  }
}

const { columns, indexes } = petsShape();
const dir = mkdtempSync(join(dirname(dirname(servicePath)), 'animal-store-bench-inserts-'));
try {
  const db = new Database(join(dir, 'inserts.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  const column = (c) =>
    `"${c.name}" ${c.type}${c.notnull ? ' not null' : ''}${c.dflt_value === null ? '' : ` default ${c.dflt_value}`}`;
  db.exec(
    `create table bench_inserts (id integer primary key autoincrement, ${columns.map(column).join(', ')})`,
  );
  for (const index of indexes) {
    db.exec(
      `create ${index.unique ? 'unique ' : ''}index "bench_${index.name}" on bench_inserts (${index.keys.join(', ')})`,
    );
  }
  const insert = db.prepare(
    'insert into "bench_inserts" ("account_id", "name", "category_id", "status", "created_at", "updated_at") ' +
      'values (?, ?, ?, ?, ?, ?) returning "id"',
  );

  // Synchronous, as better-sqlite3 is: the loop owns the thread until its deadline.
  const latencies = [];
  let errors = 0;
  const run = (s, measuring) => {
    const deadline = performance.now() + s * 1000;
    for (let now = performance.now(); now < deadline; ) {
      const at = new Date().toISOString();
      try {
        insert.get(accountId, 'Bench', Number(categoryId), 'available', at, at);
        const done = performance.now();
        if (measuring) latencies.push(done - now);
        now = done;
      } catch {
        if (measuring) errors += 1;
        now = performance.now();
      }
    }
  };
  run(Number(warmup), false);
  const started = performance.now();
  run(Number(seconds), true);
  const elapsed = (performance.now() - started) / 1000;
  db.close();

  latencies.sort((a, b) => a - b);
  const at = (q) =>
    latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? 0;
  process.stdout.write(
    `${JSON.stringify({ rps: latencies.length / elapsed, p50: at(0.5), p99: at(0.99), errors })}\n`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
