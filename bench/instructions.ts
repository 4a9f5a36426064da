/**
 * What a request costs in instructions, by build or setting: each instance runs under
 * valgrind's callgrind, which counts the instructions every thread of the process executes
 * (user space only: the kernel's work is not in it), whatever else the machine is doing. Rates
 * on this VM do not resolve 5% (bench/ab.ts); counts of one build repeat to about 1%.
 *
 * The garbage collector runs as it does at full speed: V8 sizes its young generation by the
 * allocation rate it measures against the clock, and under valgrind's pace it reads a busy
 * service as an idle one and shrinks it (semi-spaces of ~1.7 MB, where a service at full
 * speed has 32 MB after a few thousand requests), which multiplies the scavenges by up to
 * seven, each by chance of timing: one build could read 1.01× another in one run and 1.15× in
 * the next. So the semi-spaces are held at 32 MB and the memory reducer is off, and the
 * collections in the counted stretch are printed (every heap's: the SQLite checkpoint
 * thread's too, which rarely collects): two builds compared should show as many.
 *
 * Each instance is started twice on its own copy of one seeded SQLite file, and sent `FEW`
 * requests the first time and `MANY` the second, each time after the same warm-up; the
 * difference of the two counts, over the difference of the requests, is a request's cost
 * with start-up, warm-up and shutdown taken out.
 *
 * Usage: npm run build && tsx bench/instructions.ts NAME=DIR[,VAR=VALUE...]…
 *   as bench/ab.ts: `off=dist,REQUEST_LOG=off on=dist` counts the request log.
 * IC_NODE_FLAGS (more of Node's options; the service's output is kept beside each count's
 * file), IC_LOAD (mix: 90% reads, 10% POST /v1/pets, over 20 tenants; get: one account's
 * first page; post), IC_FEW (2000), IC_MANY (6000), IC_WARMUP (2000), IC_CONNECTIONS (8).
 * Needs valgrind (Debian's package); a run takes minutes: the service runs ~50× slower.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, copyFileSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/cluster/harness.js';
import { seed } from './seed.js';
import {
  type BenchRequest,
  firstPage,
  instanceSpec,
  newPet,
  serviceEnv,
  untilReady,
} from './service.js';

const LOAD = process.env.IC_LOAD ?? 'mix';
const FEW = Number(process.env.IC_FEW ?? 2000);
const MANY = Number(process.env.IC_MANY ?? 6000);
const WARMUP = Number(process.env.IC_WARMUP ?? 2000);
const CONNECTIONS = Number(process.env.IC_CONNECTIONS ?? 8);
/** The collector as at full speed (above), and its trace, to count its collections. */
const NODE_FLAGS = [
  '--no-memory-reducer',
  '--min-semi-space-size=32',
  '--max-semi-space-size=32',
  '--trace-gc',
  ...(process.env.IC_NODE_FLAGS ?? '').split(' ').filter(Boolean),
];
const ROOT = new URL('../', import.meta.url).pathname;

const specs = process.argv.slice(2);
if (specs.length < 1) {
  console.error('usage: tsx bench/instructions.ts NAME=DIR[,VAR=VALUE...]…');
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), 'animal-store-ic-'));
const seeded = await seed(`sqlite:${join(dir, 'seed.db')}`, 20_000);

/** The `i`th request of the load: the same sequence for every instance. */
function requestOf(i: number): BenchRequest {
  if (LOAD === 'get') return firstPage(seeded.key);
  if (LOAD === 'post') return newPet(seeded.key, seeded.categoryId);
  // A fixed pattern, not random: every instance gets the same requests in the same order.
  const tenant = seeded.tenants[i % seeded.tenants.length];
  if (!tenant) throw new Error('no tenants');
  if (i % 10 === 9) return newPet(tenant.key, tenant.categoryId);
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

/** One instance's count with `requests` sent after the warm-up: instructions of all threads,
 * and the garbage collections of its run. */
async function count(name: string, build: string, env: Record<string, string>, requests: number) {
  const file = join(dir, `${name}-${requests}.db`);
  copyFileSync(join(dir, 'seed.db'), file);
  const out = join(dir, `${name}-${requests}.callgrind`);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // The service's output (the collector's trace), kept beside its count's file.
  const output = openSync(`${out}.out`, 'w');
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      // V8 writes the code it runs: without this, valgrind would run stale translations.
      '--smc-check=all-non-file',
      '--dump-instr=no',
      `--callgrind-out-file=${out}`,
      process.execPath,
      ...NODE_FLAGS,
      join(ROOT, build, 'server.js'),
    ],
    {
      env: serviceEnv(port, `sqlite:${file}`, env),
      stdio: ['ignore', output, 'inherit'],
    },
  );
  // The child has its own copy.
  closeSync(output);
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
  const trace = readFileSync(`${out}.out`, 'utf8');
  return {
    instructions: Number(totals[1]),
    scavenges: trace.match(/: Scavenge /g)?.length ?? 0,
    majors: trace.match(/: Mark-Compact /g)?.length ?? 0,
  };
}

const results: Array<{ name: string; perRequest: number }> = [];
for (const spec of specs) {
  const { name, build, env } = instanceSpec(spec);
  const few = await count(name, build, env, FEW);
  const many = await count(name, build, env, MANY);
  const perRequest = (many.instructions - few.instructions) / (MANY - FEW);
  results.push({ name, perRequest });
  console.log(
    `${name}: ${few.instructions.toLocaleString('en')} instructions with ${FEW} requests, ` +
      `${many.instructions.toLocaleString('en')} with ${MANY}: ` +
      `${Math.round(perRequest).toLocaleString('en')} a request; in the counted stretch ` +
      `${many.scavenges - few.scavenges} scavenges, ${many.majors - few.majors} major collections`,
  );
}
const first = results[0];
for (const { name, perRequest } of results.slice(1)) {
  if (first) console.log(`${name}: ${(perRequest / first.perRequest).toFixed(3)} × ${first.name}`);
}
console.log(`callgrind's files (callgrind_annotate FILE): ${dir}`);
