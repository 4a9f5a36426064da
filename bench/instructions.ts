/**
 * What a request costs in instructions, by build or setting: each instance runs under
 * valgrind's callgrind, which counts the instructions every thread of the process executes
 * (user space only: the kernel's work is not in it), whatever else the machine is doing. Rates
 * on this VM do not resolve 5% (bench/ab.ts); counts of one build repeat to about 1%, but
 * where a major garbage collection falls can move a request by ±5% between builds: read the
 * breakdown by function (callgrind_annotate on the files it leaves) before the total.
 *
 * Each instance is started twice on its own copy of one seeded SQLite file, and sent `FEW`
 * requests the first time and `MANY` the second, each time after the same warm-up; the
 * difference of the two counts, over the difference of the requests, is a request's cost
 * with start-up, warm-up and shutdown taken out.
 *
 * Usage: npm run build && tsx bench/instructions.ts NAME=DIR[,VAR=VALUE...]…
 *   as bench/ab.ts: `off=dist,REQUEST_LOG=off on=dist` counts the request log.
 * IC_LOAD (mix: 90% reads, 10% POST /v1/pets, over 20 tenants; get: one account's first
 * page; post), IC_FEW (2000), IC_MANY (6000), IC_WARMUP (2000), IC_CONNECTIONS (8).
 * Needs valgrind (Debian's package); a run takes minutes: the service runs ~50× slower.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/cluster/harness.js';
import { seed } from './seed.js';
import { instanceSpec, serviceEnv, untilReady } from './service.js';

const LOAD = process.env.IC_LOAD ?? 'mix';
const FEW = Number(process.env.IC_FEW ?? 2000);
const MANY = Number(process.env.IC_MANY ?? 6000);
const WARMUP = Number(process.env.IC_WARMUP ?? 2000);
const CONNECTIONS = Number(process.env.IC_CONNECTIONS ?? 8);
const ROOT = new URL('../', import.meta.url).pathname;

const specs = process.argv.slice(2);
if (specs.length < 1) {
  console.error('usage: tsx bench/instructions.ts NAME=DIR[,VAR=VALUE...]…');
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), 'animal-store-ic-'));
const seeded = await seed(`sqlite:${join(dir, 'seed.db')}`, 20_000);

interface Request {
  path: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
}

/** The `i`th request of the load: the same sequence for every instance. */
function requestOf(i: number): Request {
  const auth = { authorization: `Bearer ${seeded.key}` };
  const post = (key: string, categoryId: number): Request => ({
    path: '/v1/pets',
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'IC', categoryId }),
  });
  if (LOAD === 'get') return { path: '/v1/pets?limit=20', method: 'GET', headers: auth };
  if (LOAD === 'post') return post(seeded.key, seeded.categoryId);
  // A fixed pattern, not random: every instance gets the same requests in the same order.
  const tenant = seeded.tenants[i % seeded.tenants.length];
  if (!tenant) throw new Error('no tenants');
  if (i % 10 === 9) return post(tenant.key, tenant.categoryId);
  const read = tenant.reads[Math.floor(i / seeded.tenants.length) % tenant.reads.length] ?? '';
  return { path: read, method: 'GET', headers: { authorization: `Bearer ${tenant.key}` } };
}

/** Sends requests `from` to `to` (exclusive) over CONNECTIONS keep-alive clients. */
async function send(base: string, from: number, to: number): Promise<void> {
  let next = from;
  const client = async () => {
    while (next < to) {
      const request = requestOf(next++);
      const response = await fetch(base + request.path, {
        method: request.method,
        headers: request.headers,
        ...(request.body !== undefined && { body: request.body }),
      });
      await response.arrayBuffer();
      if (!response.ok) throw new Error(`${request.method} ${request.path}: ${response.status}`);
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, client));
}

/** One instance's count with `requests` sent after the warm-up: instructions of all threads. */
async function count(name: string, build: string, env: Record<string, string>, requests: number) {
  const file = join(dir, `${name}-${requests}.db`);
  copyFileSync(join(dir, 'seed.db'), file);
  const out = join(dir, `${name}-${requests}.callgrind`);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      // V8 writes the code it runs: without this, valgrind would run stale translations.
      '--smc-check=all-non-file',
      '--dump-instr=no',
      `--callgrind-out-file=${out}`,
      process.execPath,
      join(ROOT, build, 'server.js'),
    ],
    { env: serviceEnv(port, `sqlite:${file}`, env), stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const exited = once(child, 'exit');
  try {
    await untilReady(child, base, 5 * 60_000);
    await send(base, 0, WARMUP);
    await send(base, WARMUP, WARMUP + requests);
    // The batches written: the request log's last, the writes' syncs.
    await new Promise((r) => setTimeout(r, 2000));
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  // Every thread's file (callgrind writes one per thread with --separate-threads only).
  const totals = readFileSync(out, 'utf8').match(/^(?:summary|totals): (\d+)/m);
  if (!totals?.[1]) throw new Error(`no totals in ${out}`);
  return Number(totals[1]);
}

const results: Array<{ name: string; perRequest: number }> = [];
for (const spec of specs) {
  const { name, build, env } = instanceSpec(spec);
  const few = await count(name, build, env, FEW);
  const many = await count(name, build, env, MANY);
  const perRequest = (many - few) / (MANY - FEW);
  results.push({ name, perRequest });
  console.log(
    `${name}: ${few.toLocaleString('en')} instructions with ${FEW} requests, ` +
      `${many.toLocaleString('en')} with ${MANY}: ${Math.round(perRequest).toLocaleString('en')} a request`,
  );
}
const first = results[0];
for (const { name, perRequest } of results.slice(1)) {
  if (first) console.log(`${name}: ${(perRequest / first.perRequest).toFixed(3)} × ${first.name}`);
}
console.log(`callgrind's files (callgrind_annotate FILE): ${dir}`);
