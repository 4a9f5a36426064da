// The insert baseline: what PostgreSQL itself sustains of single-row inserts like the service's
// pet insert, driven by a bare node-postgres loop with no HTTP in front: N connections, each
// sending the service's own insert statement, one transaction per insert (autocommit), for a
// warm-up and then a measured stretch. The rows go to `bench_inserts`, made here like `pets`
// (its columns, identity and indexes) but without its foreign keys: inserted concurrently, the
// pets of one account all lock the same account and category rows (FOR KEY SHARE, a MultiXact
// each), which cost PostgreSQL up to a third of its rate here, and a batching writer avoids that.
// Prints one JSON line: { rps, p50, p99, errors } (ms).
// Usage: node bench/insert-baseline.mjs <url> <account id> <category id> <connections>
//        <warm-up s> <measured s>
import pg from 'pg';

const [url, accountId, categoryId, connections, warmup, seconds] = process.argv.slice(2);
const insert =
  'insert into "bench_inserts" ("account_id", "name", "category_id", "status", "created_at", "updated_at") ' +
  'values ($1, $2, $3, $4, $5, $6) returning "id"';

const setup = new pg.Client({ connectionString: url });
await setup.connect();
await setup.query('create table if not exists bench_inserts (like pets including all)');
await setup.end();

const clients = await Promise.all(
  Array.from({ length: Number(connections) }, async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    return client;
  }),
);
let measuring = false;
let stopping = false;
let errors = 0;
const latencies = [];
async function loop(client) {
  while (!stopping) {
    const started = performance.now();
    const at = new Date().toISOString();
    try {
      await client.query(insert, [accountId, 'Bench', categoryId, 'available', at, at]);
      if (measuring) latencies.push(performance.now() - started);
    } catch {
      if (measuring) errors += 1;
    }
  }
}
const sleep = (s) => new Promise((resolve) => setTimeout(resolve, s * 1000));
const loops = clients.map(loop);
await sleep(Number(warmup));
measuring = true;
const started = performance.now();
await sleep(Number(seconds));
measuring = false;
const elapsed = (performance.now() - started) / 1000;
stopping = true;
await Promise.all(loops);
await Promise.all(clients.map((client) => client.end()));
latencies.sort((a, b) => a - b);
const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? 0;
process.stdout.write(
  `${JSON.stringify({ rps: latencies.length / elapsed, p50: at(0.5), p99: at(0.99), errors })}\n`,
);
