/**
 * What the request log costs (docs/decisions/0013-request-log.md, 0015): capturing an answered
 * request (the onSend hook's work: its entry encoded into its batch; an error's body
 * redacted), and writing batches of BENCH_LOG_BATCH (5,000) entries of BENCH_LOG_ACCOUNTS (20)
 * accounts (their segments made, then one `Database.write`) on SQLite and, with
 * BENCH_DATABASE_URL (or TEST_DATABASE_URL) set, on PostgreSQL, into a log that already holds
 * 100,000 entries.
 * Usage: npm run build && tsx bench/request-log.ts [batches]; DIST=dist-before measures a
 * copy of the compiled service made before a change (`cp -r dist dist-before`).
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median } from './stats.js';

// The compiled service, as production runs it (see bench/limiter.ts).
const dist = (path: string) =>
  new URL(`../${process.env.DIST ?? 'dist'}/${path}`, import.meta.url).href;
const { RequestLog, rowsOf } = (await import(
  dist('request-log/writer.js')
)) as typeof import('../src/request-log/writer.js');
const { keptBody } = (await import(
  dist('request-log/domain.js')
)) as typeof import('../src/request-log/domain.js');
const { insertRequestLog } = (await import(
  dist('request-log/repository.js')
)) as typeof import('../src/request-log/repository.js');
const { openDatabase } = (await import(
  dist('store/database.js')
)) as typeof import('../src/store/database.js');
type AnsweredRequest = import('../src/request-log/writer.js').AnsweredRequest;

const batches = Number(process.argv[2] ?? 40);
const BATCH = Number(process.env.BENCH_LOG_BATCH ?? 5_000);
const accounts = Array.from(
  { length: Number(process.env.BENCH_LOG_ACCOUNTS ?? 20) },
  (_, i) => `acct_${i}`,
);

/** A request as the hook captures it: nine GETs answered 200 for one POST refused with 400. */
function answered(i: number, at: number): AnsweredRequest {
  const failed = i % 10 === 9;
  return {
    accountId: accounts[i % accounts.length] as string,
    keyId: 'key_0aBcDeFgHiJkLmNo',
    id: randomUUID(),
    method: failed ? 'POST' : 'GET',
    route: failed ? '/v1/pets' : '/v1/pets/{petId}',
    url: failed ? '/v1/pets' : `/v1/pets/${i}?limit=20`,
    status: failed ? 400 : 200,
    durationMs: 1.234,
    at,
    ip: '203.0.113.7',
    idempotencyKey: failed ? randomUUID() : undefined,
    replayed: false,
    body: failed ? keptBody({ name: '', categoryId: 1, apiKey: 'as_test_x' }) : null,
    errorBody: failed
      ? '{"code":"validation_failed","message":"Invalid body/name: must NOT have fewer than 1 characters.","status":400,"details":[{"location":"body/name","message":"must NOT have fewer than 1 characters"}]}'
      : null,
  };
}

function p95(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length * 0.95)] ?? 0;
}

function perOp(label: string, iterations: number, run: (i: number) => unknown): void {
  for (let i = 0; i < iterations / 10; i++) run(i); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) run(i);
  const ns = Number(process.hrtime.bigint() - start) / iterations;
  console.log(`${label.padEnd(48)} ${(ns / 1000).toFixed(3).padStart(8)} µs`);
}

// Capture: what the hook does for a success (an object of what the request holds, pushed),
// and the extra work of an error (its body walked, redacted and cut).
const unwritten = new RequestLog(
  { write: async () => undefined as never },
  { isDown: () => false, databaseFailed: () => false },
  { requestLogWritten: () => {}, requestLogDropped: () => {}, watchRequestLog: () => {} },
  { error: () => {} },
  { maxBuffered: 10_000_000, batchSize: 10_000_000, everyMs: 600_000 },
);
const start = Date.now();
perOp('capture a success (object + add)', 500_000, (i) =>
  unwritten.add({
    accountId: 'acct_1',
    keyId: 'key_0aBcDeFgHiJkLmNo',
    id: 'req',
    method: 'GET',
    route: '/v1/pets',
    url: '/v1/pets',
    status: 200,
    durationMs: 1.2,
    at: start + i,
    ip: '127.0.0.1',
    idempotencyKey: undefined,
    replayed: false,
    body: null,
    errorBody: null,
  }),
);
// As a mixed load captures them: the accounts taking turns, each request with its UUID (made
// beforehand: making one is not the log's cost), one in seven a POST answered 201.
const ids = Array.from({ length: 1 << 16 }, () => randomUUID());
const routes = [
  ['GET', '/v1/pets', '/v1/pets?limit=20'],
  ['GET', '/v1/pets', '/v1/pets?status=sold&limit=20'],
  ['GET', '/v1/pets/{petId}', '/v1/pets/1234'],
  ['POST', '/v1/pets', '/v1/pets'],
] as const;
perOp(`capture a mixed load (${accounts.length} accounts, 4 routes)`, 500_000, (i) => {
  const [method, route, url] = routes[i % 7 === 0 ? 3 : i % 3] ?? routes[0];
  unwritten.add({
    accountId: accounts[i % accounts.length] as string,
    keyId: `key_0aBcDeFgHiJk${i % 20}`,
    id: ids[i & 0xffff] as string,
    method,
    route,
    url,
    status: method === 'POST' ? 201 : 200,
    durationMs: 0.8,
    at: start + i / 40,
    ip: '127.0.0.1',
    idempotencyKey: undefined,
    replayed: false,
    body: null,
    errorBody: null,
  });
});
const body = { name: 'Rex', categoryId: 1, status: 'sold', password: 'x', tags: ['a', 'b'] };
perOp('redact and cut a small error body (keptBody)', 200_000, () => keptBody(body));
const big = { items: Array.from({ length: 5_000 }, (_, i) => ({ name: `pet ${i}`, token: i })) };
perOp('redact and cut a 150 KB body (stops at 4 KB)', 20_000, () => keptBody(big));
await unwritten.close();

async function writeBatches(url: string, label: string): Promise<void> {
  const database = openDatabase(url, { poolSize: 2 });
  try {
    await database.schema.migrate();
    let at = Date.now() - 3_600_000;
    // A table of 100,000 entries first: indexes as deep as a used log's.
    for (let b = 0; b < Math.ceil(100_000 / BATCH); b++) {
      const { segments, hours } = rowsOf(
        Array.from({ length: BATCH }, (_, i) => answered(i, at++)),
        'seed',
      );
      await database.write((tx) => insertRequestLog(tx, segments, hours), { blind: true });
    }
    const rows: number[] = [];
    const writes: number[] = [];
    const cpus: number[] = [];
    for (let b = 0; b < batches; b++) {
      const requests = Array.from({ length: BATCH }, (_, i) => answered(i, at++));
      const t0 = performance.now();
      const { segments, hours } = rowsOf(requests, 'bench');
      const t1 = performance.now();
      const cpu = process.cpuUsage();
      await database.write((tx) => insertRequestLog(tx, segments, hours), { blind: true });
      const used = process.cpuUsage(cpu);
      const t2 = performance.now();
      rows.push(t1 - t0);
      writes.push(t2 - t1);
      cpus.push((used.user + used.system) / 1000);
    }
    console.log(
      `${label}: ${BATCH} entries of ${accounts.length} accounts: rows ${median(rows).toFixed(2)} ms (p95 ${p95(rows).toFixed(2)}), ` +
        `write ${median(writes).toFixed(2)} ms (p95 ${p95(writes).toFixed(2)}; ` +
        `this process's CPU ${median(cpus).toFixed(2)} ms), ` +
        `${(((median(rows) + median(writes)) * 1000) / BATCH).toFixed(2)} µs an entry ` +
        `(${((median(cpus) * 1000) / BATCH).toFixed(2)} µs of CPU writing it)`,
    );
  } finally {
    await database.close();
  }
}

const file = join(tmpdir(), `request-log-bench-${randomUUID()}.db`);
try {
  await writeBatches(`sqlite:${file}`, 'SQLite');
} finally {
  for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
}
const postgres = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
if (postgres) await writeBatches(postgres, 'PostgreSQL');
