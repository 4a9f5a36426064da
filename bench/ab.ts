/**
 * Two or more builds (or settings) of the service, measured in alternating runs of one load:
 * what a change costs, from runs that met the same stretch of the machine. Embedded mode, each
 * instance on its own copy of one seeded SQLite file, all on the servers' core when pinned; or,
 * with AB_STORE=shared, every instance on one seeded PostgreSQL database (a new one on the
 * server at DATABASE_URL, dropped after) and the Redis at REDIS_URL, as that mode runs.
 *
 * Usage: npm run build && tsx bench/ab.ts NAME=DIR[,VAR=VALUE...] NAME=DIR[,VAR=VALUE...]…
 *   DIR is a compiled service inside the checkout (node_modules must resolve from it): `dist`,
 *   or a copy made before the change (`cp -r dist dist-before`; `dist-*` is not committed).
 *   `off=dist,REQUEST_LOG=off on=dist` measures the request log.
 * AB_LOAD (mix: the 90/10 mix of 20 tenants; get: one account's first page; post; post-keyed:
 *   the same POST with a fresh Idempotency-Key each, as the SDK sends it),
 * AB_PAIRS (6): rounds, each running every instance twice, mirrored (A B B A, then B A A B);
 * AB_SECONDS (3) a run; AB_PETS (20000) for the one account; AB_NODE_ARGS: Node's options
 * for every instance, those NODE_OPTIONS refuses too (`--trace-gc`);
 * AB_WARMUP (1): seconds of the load each instance gets, unmeasured, before its first round;
 * AB_FRESH=1 starts every instance again (same port, same store) before each round, and warms
 * it again: what a process a few seconds old costs, as bench/run.ts's twins are measured;
 * AB_PERF=DIR records each run of each instance with `perf record -g` into DIR/NAME-RUN.data.
 * Prints every run, then each instance's mean rate and the service's CPU a request (user and
 * system, all its threads, from /proc; shared, PostgreSQL's and Redis's too, apart) against
 * the first instance's, with the median and the range of the rounds' ratios (a round's: the
 * ratio of the two instances' summed rates), and that CPU by thread (the main thread, the
 * garbage collector's helpers, worker threads, libuv's pool). Two instances of one build (an
 * A/A run) show what this machine's noise reads as on its own: on this VM, 0.83–1.03 a round,
 * and up to 13% apart for a whole run; give each build two instances or more
 * (`a=dist-before b=dist a2=dist-before b2=dist`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/cluster/harness.js';
import { freshPostgres } from '../test/helpers.js';
import { type LoadSpec, load, serverCommand } from './load.js';
import { seed } from './seed.js';
import {
  cpuFrom,
  cpuMs,
  firstPage,
  instanceSpec,
  newPet,
  sentTo,
  serviceEnv,
  storePids,
  threadCpuMs,
  untilReady,
} from './service.js';
import { median } from './stats.js';

const PAIRS = Number(process.env.AB_PAIRS ?? 6);
const SECONDS = Number(process.env.AB_SECONDS ?? 3);
const LOAD = process.env.AB_LOAD ?? 'mix';
const NODE_ARGS = process.env.AB_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
const PERF = process.env.AB_PERF;
const SHARED = process.env.AB_STORE === 'shared';
const FRESH = process.env.AB_FRESH === '1';
const WARMUP = Number(process.env.AB_WARMUP ?? 1);
const CONNECTIONS = 50;
const ROOT = new URL('../', import.meta.url).pathname;

interface Instance {
  name: string;
  child: ChildProcess | undefined;
  base: string;
  /** What its process is started with. */
  launch: { args: string[]; env: NodeJS.ProcessEnv };
  rates: number[];
  cpuUs: number[];
  /** PostgreSQL's and Redis's CPU µs a request in each run (shared). */
  storeUs: number[];
  /** CPU µs a request by thread name, summed over its runs (divided by them when printed). */
  threadUs: Map<string, number>;
  /** Its summed rate in each round. */
  roundRates: number[];
}

const specs = process.argv.slice(2);
if (specs.length < 2) {
  console.error('usage: tsx bench/ab.ts NAME=DIR[,VAR=VALUE...] NAME=DIR[,VAR=VALUE...]…');
  process.exit(2);
}
if (SHARED && !(process.env.DATABASE_URL?.startsWith('postgres') && process.env.REDIS_URL)) {
  console.error('AB_STORE=shared needs DATABASE_URL (postgres://…) and REDIS_URL');
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), 'animal-store-ab-'));
const postgres = SHARED
  ? await freshPostgres(process.env.DATABASE_URL ?? '', 'animal_store_ab')
  : undefined;
const seedUrl = postgres?.url ?? `sqlite:${join(dir, 'seed.db')}`;
const seeded = await seed(seedUrl, Number(process.env.AB_PETS ?? 20_000)).catch(async (err) => {
  // Not left behind on the server: the finally below is not reached yet.
  await postgres?.drop();
  throw err;
});
const shared = { REDIS_URL: process.env.REDIS_URL ?? '', REDIS_KEY_PREFIX: `ab-${Date.now()}:` };
const instances: Instance[] = [];

/** The store an instance runs on: its own copy of the seeded file, or the shared database. */
function storeOf(name: string): string {
  if (postgres) return postgres.url;
  const file = join(dir, `${name}.db`);
  copyFileSync(join(dir, 'seed.db'), file);
  return `sqlite:${file}`;
}

async function start(spec: string): Promise<void> {
  const { name, build, env } = instanceSpec(spec);
  const port = await freePort();
  const instance: Instance = {
    name,
    child: undefined,
    base: `http://127.0.0.1:${port}`,
    launch: {
      args: [...NODE_ARGS, join(ROOT, build, 'server.js')],
      env: serviceEnv(port, storeOf(name), { ...(SHARED && shared), ...env }),
    },
    rates: [],
    cpuUs: [],
    storeUs: [],
    threadUs: new Map(),
    roundRates: [],
  };
  // Stopped with the others (the finally below), whether it starts or not.
  instances.push(instance);
  await launch(instance);
}

/** Starts an instance's process (again, with AB_FRESH: on the same port and store). */
async function launch(instance: Instance): Promise<void> {
  const [command, argv] = serverCommand(instance.launch.args);
  instance.child = spawn(command, argv, {
    env: instance.launch.env,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  await untilReady(instance.child, instance.base);
}

async function stop(instance: Instance): Promise<void> {
  const { child } = instance;
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

/** Its warm-up: AB_WARMUP seconds of the load, unmeasured. */
const warm = (instance: Instance) =>
  load({ ...loadFor(instance.base), connections: CONNECTIONS, seconds: WARMUP });

function loadFor(base: string): Omit<LoadSpec, 'connections' | 'seconds'> {
  if (LOAD === 'get') return sentTo(base, firstPage(seeded.key));
  if (LOAD === 'post') return sentTo(base, newPet(seeded.key, seeded.categoryId));
  if (LOAD === 'post-keyed') {
    return { ...sentTo(base, newPet(seeded.key, seeded.categoryId)), idempotencyKeys: true };
  }
  return { url: `${base}/`, mix: { tenants: seeded.tenants, writeShare: 0.1 } };
}

const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

/** `perf record` of a process until stopped, when AB_PERF names a folder. */
function recording(instance: Instance, pid: number): (() => Promise<void>) | undefined {
  if (!PERF) return undefined;
  mkdirSync(PERF, { recursive: true });
  const file = join(PERF, `${instance.name}-${instance.rates.length}.data`);
  const perf = spawn('perf', ['record', '-q', '-F', '999', '-g', '-p', String(pid), '-o', file], {
    stdio: 'ignore',
  });
  const exited = once(perf, 'exit');
  // Not installed, or not allowed: the run goes on unrecorded.
  perf.on('error', (error) => console.error(`perf: ${error.message}`));
  return async () => {
    if (perf.exitCode === null && perf.signalCode === null && perf.pid !== undefined) {
      perf.kill('SIGINT');
      await exited;
    }
  };
}

/** One run of the load against an instance: its rate, its CPU a request, by thread too. */
async function run(instance: Instance): Promise<number> {
  const pid = instance.child?.pid ?? 0;
  const storeCpu = cpuFrom(SHARED ? storePids() : []);
  const before = cpuMs([pid]);
  const threadsBefore = threadCpuMs(pid);
  const stopRecording = recording(instance, pid);
  const result = await load({
    ...loadFor(instance.base),
    connections: CONNECTIONS,
    seconds: SECONDS,
  });
  await stopRecording?.();
  const served = result.requestsPerSecond * SECONDS;
  // The process's time first: its threads' read after it can only have more.
  const after = cpuMs([pid]);
  const cpuUs = ((after - before) * 1000) / served;
  const storeUs = (storeCpu() * 1000) / served;
  // By thread id, then by name; what the process used beyond its live threads' share was
  // used by threads that ended during the run.
  let counted = 0;
  for (const [id, { name, ms }] of threadCpuMs(pid)) {
    const used = ms - (threadsBefore.get(id)?.ms ?? 0);
    counted += used;
    instance.threadUs.set(name, (instance.threadUs.get(name) ?? 0) + (used * 1000) / served);
  }
  const ended = after - before - counted;
  // A tick (10 ms) or more.
  if (ended >= 10) {
    const name = 'threads that ended';
    instance.threadUs.set(name, (instance.threadUs.get(name) ?? 0) + (ended * 1000) / served);
  }
  instance.rates.push(result.requestsPerSecond);
  instance.cpuUs.push(cpuUs);
  instance.storeUs.push(storeUs);
  console.log(
    `${instance.name}: ${Math.round(result.requestsPerSecond)} req/s, p99 ${result.p99Ms.toFixed(1)} ms, ${cpuUs.toFixed(1)} µs a request${SHARED ? ` (+ ${storeUs.toFixed(1)} stores)` : ''}${result.errors > 0 ? `, ${result.errors} non-2xx` : ''}`,
  );
  return result.requestsPerSecond;
}

try {
  for (const spec of specs) await start(spec);
  for (let pair = 0; pair < PAIRS; pair++) {
    if (FRESH && pair > 0) {
      for (const instance of instances) await stop(instance);
      for (const instance of instances) await launch(instance);
    }
    if (FRESH || pair === 0) for (const instance of instances) await warm(instance);
    const order = pair % 2 === 0 ? instances : [...instances].reverse();
    const summed = new Map<Instance, number>();
    for (const instance of [...order, ...[...order].reverse()]) {
      summed.set(instance, (summed.get(instance) ?? 0) + (await run(instance)));
    }
    for (const [instance, rate] of summed) instance.roundRates.push(rate);
  }
  const [first] = instances;
  console.log(`\n${LOAD}, ${PAIRS} rounds of ${SECONDS} s runs:`);
  for (const instance of instances) {
    const rate = mean(instance.rates);
    const cpu = mean(instance.cpuUs);
    const store = SHARED ? `, stores ${mean(instance.storeUs).toFixed(1)} µs` : '';
    const ratios = instance.roundRates.map((r, round) => r / (first?.roundRates[round] ?? NaN));
    console.log(
      `${instance.name}: ${Math.round(rate)} req/s, ${cpu.toFixed(1)} µs a request${store}` +
        (first && instance !== first
          ? ` (${(rate / mean(first.rates)).toFixed(3)} × ${first.name}'s rate, ${(cpu - mean(first.cpuUs)).toFixed(1)} µs;` +
            ` rounds: median ${median(ratios).toFixed(3)}, ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`
          : ''),
    );
  }
  console.log('\nCPU µs a request by thread:');
  const threads = [...new Set(instances.flatMap((i) => [...i.threadUs.keys()]))].sort();
  for (const instance of instances) {
    const runs = instance.cpuUs.length;
    const parts = threads.map(
      (thread) => `${thread} ${((instance.threadUs.get(thread) ?? 0) / runs).toFixed(1)}`,
    );
    console.log(`${instance.name}: ${parts.join(', ')}`);
  }
} finally {
  for (const instance of instances) await stop(instance);
  rmSync(dir, { recursive: true, force: true });
  await postgres?.drop();
}
