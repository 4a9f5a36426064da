/**
 * The whole request path against a raw node:http ceiling, measured in one run
 * (`npm run bench`). Embedded mode always; PostgreSQL + Redis too when DATABASE_URL and
 * REDIS_URL are set. Prints one table and writes it to bench/results/latest.json.
 *
 * BENCH_PETS (100000), BENCH_ROUNDS (5), BENCH_SECONDS (3), BENCH_WARMUP (1),
 * BENCH_CONNECTIONS (50), BENCH_TWIN_PAIRS (3);
 * BENCH_MEMORY=1 adds three one-minute GET runs and the service's RSS after each.
 * BENCH_ONLY=text runs only the scenarios whose name contains it (or one of its `|`-separated
 * parts), and the ceiling, for trying a change quickly; such a partial run does not write
 * latest.json.
 *
 * The request log's cost: three pairs of twins, more instances of the service on the same
 * store, each pair alike but for REQUEST_LOG=off in one (each with its own worker), answer the
 * GET, the POST and the 90/10 mix again and nothing else, so that no twin has served a load its
 * other has not; all are started afresh before every round. Each twin runs once a round,
 * mirrored across the pairs (with, without of the first pair, then without, with of the
 * second, with, without of the third; the other way in even rounds), right after the same
 * scenario on the first instance;
 * their rows end in "(request log on)" and "(request log off)", and the log's cost is the
 * median of the rounds' ratios of the twins' summed rates. Every other figure
 * (the deep page against the first page, keyed POSTs against plain ones) compares runs of the
 * first instance.
 *
 * The POSTs are also measured against the store's own limit for the same insert, run in every
 * round just before the first of them: on PostgreSQL a bare pg client loop with the same
 * connections (bench/insert-baseline.mjs), embedded a bare better-sqlite3 loop of durable
 * commits, one writer (bench/sqlite-insert-baseline.mjs).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/cluster/harness.js';
import { freshPostgres } from '../test/helpers.js';
import { type LoadResult, type LoadSpec, load, pinned, serverCommand, tool } from './load.js';
import { type Seeded, seed } from './seed.js';
import {
  cpuFrom,
  firstPage,
  newPet,
  sentTo,
  serviceEnv,
  storePids,
  untilReady,
} from './service.js';
import { median as medianValue } from './stats.js';

const dist = (path: string) => new URL(`../dist/${path}`, import.meta.url).href;
const { openDatabase } = (await import(
  dist('store/database.js')
)) as typeof import('../src/store/database.js');
const { countUnsettled } = (await import(
  dist('messages/repository.js')
)) as typeof import('../src/messages/repository.js');

const PETS = Number(process.env.BENCH_PETS ?? 100_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const TWIN_PAIRS = Number(process.env.BENCH_TWIN_PAIRS ?? 3);
const ROOT = new URL('../', import.meta.url).pathname;
const ONLY = process.env.BENCH_ONLY ?? '';
/** The mixed loads' name: every request from one of 20 tenants, picked at random. */
const MIX = '20 tenants:';
const MIXED_CEILING = "ceiling: node:http, the mixed loads' requests";
/** The insert baseline's row, by mode. */
const INSERTS = {
  postgres: 'baseline: single-row inserts, bare pg client',
  sqlite: 'baseline: durable single-row inserts, bare better-sqlite3',
} as const;
/** The scenarios measured against the insert baseline too. */
const KEYED = '(Idempotency-Key)';
/** The rows of the request log's twins: the instance with the log, and the one without. */
const LOG_ON = '(request log on)';
const LOG_OFF = '(request log off)';
const AGAINST_INSERTS = [
  'POST /v1/pets',
  'POST /messages',
  `POST /v1/pets ${KEYED}`,
  `POST /messages ${KEYED}`,
];

/** A load's result, or an insert baseline's (made by a database client, not a load tool). */
type Measured = Omit<LoadResult, 'tool'> & {
  tool: LoadResult['tool'] | 'better-sqlite3';
  /** CPU time a request cost the service (and, shared, PostgreSQL and Redis), in µs. */
  cpuUs?: number;
};

interface Row extends Measured {
  mode: string;
  scenario: string;
  ratio: number;
  /** Against the insert baseline of the same rounds (writes only). */
  vsInserts?: number;
  /** Against its twin without the request log, run beside it: the median of the rounds. */
  vsLogOff?: number;
  /** …and each round's, in order. */
  vsLogOffRounds?: number[];
  /** Requests per second in each round. */
  rounds: number[];
}

/** The item with the median value (the upper middle one of an even count). */
function median<T>(items: T[], value: (item: T) => number): T {
  const sorted = [...items].sort((a, b) => value(a) - value(b));
  const middle = sorted[Math.floor(sorted.length / 2)];
  if (!middle) throw new Error('no runs to take a median of');
  return middle;
}

/** Every process the run starts, stopped however it ends (`stopAll`). */
const children = new Set<ChildProcess>();

function startChild(args: string[], env: Record<string, string>, ready: RegExp) {
  const [command, argv] = serverCommand(args);
  const child = spawn(command, argv, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  const append = (chunk: unknown) => {
    out += String(chunk);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  return new Promise<{ child: ChildProcess; match: RegExpExecArray; out: () => string }>(
    (resolve, reject) => {
      const timer = setInterval(() => {
        const match = ready.exec(out);
        if (match) {
          clearInterval(timer);
          resolve({ child, match, out: () => out });
        } else if (child.exitCode !== null) {
          clearInterval(timer);
          reject(new Error(`${args.join(' ')} exited:\n${out}`));
        }
      }, 50);
    },
  );
}

async function stop(child: ChildProcess): Promise<void> {
  // Ended already: by itself (exitCode) or by a signal (signalCode).
  if (child.exitCode === null && child.signalCode === null) {
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
  }
  children.delete(child);
}

async function stopAll(): Promise<void> {
  await Promise.all([...children].map(stop));
}

function rssMb(pid: number | undefined): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
}

/**
 * The store's own rate for single-row inserts like the service's pet insert (into a table
 * like `pets`), on the servers' core (where the service, the database's client, runs), with
 * the loads' warm-up and seconds: on PostgreSQL bench/insert-baseline.mjs with the loads'
 * connections; on SQLite bench/sqlite-insert-baseline.mjs, one writer committing durably into
 * a file of its own beside the service's database.
 */
async function insertBaseline(url: string, target: Seeded['throwaway']): Promise<Measured> {
  const postgres = url.startsWith('postgres');
  const args = postgres
    ? [join(ROOT, 'bench/insert-baseline.mjs'), url, target.accountId, String(target.categoryId)]
    : [
        join(ROOT, 'bench/sqlite-insert-baseline.mjs'),
        url.slice('sqlite:'.length),
        target.accountId,
        String(target.categoryId),
      ];
  const { child, match } = await startChild(
    [...args, ...(postgres ? [String(CONNECTIONS)] : []), String(WARMUP), String(SECONDS)],
    {},
    /^(\{.*\})$/m,
  );
  if (child.exitCode === null) await once(child, 'exit');
  children.delete(child);
  const r = JSON.parse(match[1] ?? '{}') as Record<string, number>;
  return {
    requestsPerSecond: r.rps ?? NaN,
    p50Ms: r.p50 ?? NaN,
    p99Ms: r.p99 ?? NaN,
    errors: r.errors ?? 0,
    tool: postgres ? 'pg' : 'better-sqlite3',
  };
}

/**
 * A warm-up, then the measured run, with the CPU time the processes serving it used during
 * it: a figure that moves far less than requests per second on a shared VM.
 */
async function measure(
  spec: Omit<LoadSpec, 'connections' | 'seconds'>,
  serving: readonly number[] = [],
): Promise<Measured> {
  await load({ ...spec, connections: CONNECTIONS, seconds: WARMUP });
  const cpu = cpuFrom(serving);
  const result = await load({ ...spec, connections: CONNECTIONS, seconds: SECONDS });
  const used = cpu();
  const served = result.requestsPerSecond * SECONDS;
  return {
    ...result,
    ...(serving.length > 0 && served > 0 && { cpuUs: (used * 1000) / served }),
  };
}

async function runMode(
  mode: string,
  store: {
    url: string;
    drop: () => Promise<void>;
    /** A copy of the seeded store, named: a store of its own for a twin. */
    copy?: (name: string) => string;
  },
  redisUrl?: string,
) {
  const rows: Row[] = [];
  process.stdout.write(`\n[${mode}] seeding ${PETS.toLocaleString('en')} pets… `);
  const started = Date.now();
  const seeded = await seed(store.url, PETS);
  process.stdout.write(`${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  // The twins' stores (below), copied before any instance opens the seeded one.
  const twinUrls = Array.from({ length: TWIN_PAIRS }, (_, pair) => ({
    on: store.copy?.(`twin-${pair}-on`) ?? store.url,
    off: store.copy?.(`twin-${pair}-off`) ?? store.url,
  }));

  const redisKeyPrefix = `bench-${randomUUID()}:`;
  const startService = async (env: Record<string, string> = {}, on?: number, url = store.url) => {
    const port = on ?? (await freePort());
    const base = `http://127.0.0.1:${port}`;
    const [command, argv] = serverCommand([join(ROOT, 'dist/server.js')]);
    const child = spawn(command, argv, {
      env: serviceEnv(port, url, {
        ...(redisUrl && { REDIS_URL: redisUrl }),
        REDIS_KEY_PREFIX: redisKeyPrefix,
        ...env,
      }),
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    children.add(child);
    await untilReady(child, base);
    return { child, base, port };
  };
  const { child: service, base } = await startService();
  // The twins (above): three pairs, each with the request log and without. All are started
  // again, on the same ports, before every round after the first: two instances of one build,
  // given the same runs, read up to 13% apart on this VM (where each process's memory fell,
  // what its compiler chose), so a pair kept for the whole run would count one pair's luck in
  // every round. Made afresh, it is one round's noise, which the median of the rounds leaves
  // out; three pairs a round cut what one process's luck weighs in a round's ratio to a third
  // (two pairs read the shared GET at 0.88 in two full runs, where bench/ab.ts, with three
  // fresh instances of each, read 0.92: a round's ratio still spans ±0.15 here). In the
  // embedded mode each twin has a copy of the seeded file of its own, kept across its
  // restarts, as that mode runs (one process to a file): a twin's log does not grow the file
  // the others read, and their writes do not stale its caches. In the shared mode, all share
  // the store, as that mode runs.
  type Twin = Awaited<ReturnType<typeof startService>>;
  const startPair = async (
    urls: { on: string; off: string },
    ports?: { on: number; off: number },
  ) => ({
    on: await startService({}, ports?.on, urls.on),
    off: await startService({ REQUEST_LOG: 'off' }, ports?.off, urls.off),
  });
  let pairs: Array<{ on: Twin; off: Twin }> = [];
  for (const urls of twinUrls) pairs.push(await startPair(urls));
  const restartTwins = async () => {
    await Promise.all(pairs.flatMap((pair) => [stop(pair.on.child), stop(pair.off.child)]));
    const again: typeof pairs = [];
    // Each on its own store and ports again.
    for (const [index, urls] of twinUrls.entries()) {
      const pair = pairs[index];
      again.push(await startPair(urls, pair && { on: pair.on.port, off: pair.off.port }));
    }
    pairs = again;
  };
  /** The service instance a scenario's requests go to; none for the references. */
  const serving = (url: string) =>
    url.startsWith(`${base}/`)
      ? service
      : pairs.flatMap((pair) => [pair.on, pair.off]).find((twin) => url.startsWith(`${twin.base}/`))
          ?.child;
  const auth = { authorization: `Bearer ${seeded.key}` };
  // The bytes of the GET measured, for the ceiling to serve.
  const { url: pageUrl, ...pageRequest } = sentTo(base, firstPage(seeded.key));
  const page = await fetch(pageUrl, pageRequest);
  const bodyFile = join(mkdtempSync(join(tmpdir(), 'animal-store-bench-')), 'page.json');
  writeFileSync(bodyFile, Buffer.from(await page.arrayBuffer()));
  const ceiling = await startChild(
    [join(ROOT, 'bench/ceiling.mjs'), bodyFile],
    {},
    /listening (\d+)/,
  );
  const ceilingUrl = `http://127.0.0.1:${ceiling.match[1]}/`;
  const framework = await startChild(
    [join(ROOT, 'bench/framework.mjs'), bodyFile],
    {},
    /listening (\d+)/,
  );

  const json = { ...auth, 'content-type': 'application/json' };
  /** A scenario: its row's name, and its load. */
  type Scenario = [string, Omit<LoadSpec, 'connections' | 'seconds'>];
  const scenarios: Scenario[] = [
    ['ceiling: node:http, same bytes', { url: ceilingUrl }],
    ['reference: Fastify alone, same pets', { url: `http://127.0.0.1:${framework.match[1]}/` }],
    ['GET /v1/pets?limit=20', sentTo(base, firstPage(seeded.key))],
    [
      'GET /v1/pets?limit=20 (deep page)',
      { url: `${base}/v1/pets?limit=20&cursor=${seeded.deepCursor}`, headers: auth },
    ],
    [
      'GET /v1/pets?status=sold&limit=20',
      { url: `${base}/v1/pets?status=sold&limit=20`, headers: auth },
    ],
    ['POST /v1/pets', sentTo(base, newPet(seeded.key, seeded.categoryId))],
    [
      'POST /messages',
      { url: `${base}/messages`, method: 'POST', headers: json, body: '{"message":"bench"}' },
    ],
    [
      `POST /v1/pets ${KEYED}`,
      { ...sentTo(base, newPet(seeded.key, seeded.categoryId)), idempotencyKeys: true },
    ],
    [
      `POST /messages ${KEYED}`,
      {
        url: `${base}/messages`,
        method: 'POST',
        headers: json,
        body: '{"message":"bench"}',
        idempotencyKeys: true,
      },
    ],
    [`${MIX} reads`, { url: `${base}/`, mix: { tenants: seeded.tenants, writeShare: 0 } }],
    [
      `${MIX} 90% reads, 10% POST /v1/pets`,
      { url: `${base}/`, mix: { tenants: seeded.tenants, writeShare: 0.1 } },
    ],
  ];
  // The request log's twins (above): the same requests, to the instances with the log and to
  // those without.
  for (const twinned of [
    'GET /v1/pets?limit=20',
    'POST /v1/pets',
    `${MIX} 90% reads, 10% POST /v1/pets`,
  ]) {
    const spec = scenarios.find(([name]) => name === twinned)?.[1];
    if (!spec) throw new Error(`no scenario ${twinned}`);
    // The first instance's load, as it is: `twinRun` sends each run of it to one twin.
    for (const suffix of [LOG_ON, LOG_OFF]) scenarios.push([`${twinned} ${suffix}`, spec]);
  }
  if (ONLY) {
    for (let i = scenarios.length - 1; i > 0; i--) {
      const name = scenarios[i]?.[0] ?? '';
      if (!ONLY.split('|').some((part) => name.includes(part))) scenarios.splice(i, 1);
    }
  }
  // Rounds: every scenario once per round, each between two runs of the ceiling. This VM's
  // throughput drifts (by a third over minutes, seen here), so each scenario's ratio in a round
  // is taken against the mean of the ceiling runs just before and just after it; a row's ratio
  // is the median of its runs' ratios, its rate and latencies those of its median run.
  // A scenario's twins, with and without the request log, run once each in a round right
  // after it, mirrored across the pairs (odd rounds: with, without of the first pair, without,
  // with of the second, and so on; even rounds the other way), so each round gives the log's
  // cost from runs that met the same stretch of the VM: a drift that is steady across them
  // cancels out of the ratio of their sums.
  const [ceilingScenario, ceilingSpec] = scenarios[0] ?? [];
  if (!ceilingScenario || !ceilingSpec) throw new Error('no ceiling scenario');
  type Run = Measured & { ratio: number; vsInserts?: number; round: number };
  const runs = new Map<string, Run[]>();
  /** Each round's ratio of the rates with and without the request log, by scenario. */
  const vsLogOff = new Map<string, number[]>();
  let round = 0;
  const record = (scenario: string, result: Measured, ratio: number, vsInserts?: number) => {
    runs.set(scenario, [...(runs.get(scenario) ?? []), { ...result, ratio, vsInserts, round }]);
    process.stdout.write(` ${Math.round(result.requestsPerSecond)}`);
  };
  const measured = scenarios.slice(1);
  const named = (name: string) => measured.find(([other]) => other === name);
  const isTwin = (name: string) => name.endsWith(LOG_ON) || name.endsWith(LOG_OFF);
  /** A twin scenario's run against the twin `to`: its requests sent to that instance. */
  const twinRun = ([name, spec]: Scenario, to: Twin): Scenario => [
    name,
    { ...spec, url: to.base + spec.url.slice(base.length) },
  ];
  /** A scenario's twins' runs in a round, mirrored across the pairs: with and without the log
   * of the first pair, without and with of the second, and so on (the other way in even
   * rounds). */
  const twinRuns = (scenario: string, round: number): Scenario[] => {
    const [on, off] = [named(`${scenario} ${LOG_ON}`), named(`${scenario} ${LOG_OFF}`)];
    if (pairs.length < 2) throw new Error('no twins: BENCH_TWIN_PAIRS must be 2 or more');
    return pairs.flatMap((pair, index) => {
      const runs: Array<[Scenario | undefined, Twin]> = [
        [on, pair.on],
        [off, pair.off],
      ];
      if ((index + round) % 2 === 0) runs.reverse();
      return runs.flatMap(([twin, to]) => (twin ? [twinRun(twin, to)] : []));
    });
  };
  const roundOrder = (round: number) =>
    measured.flatMap((scenario): Scenario[] => {
      const [name] = scenario;
      if (!isTwin(name)) return [scenario, ...twinRuns(name, round)];
      // Run after the scenario they twin; without it (BENCH_ONLY left it out), by the first of
      // them that is here.
      const twinned = name.slice(0, name.lastIndexOf(' ('));
      const firstHere = named(`${twinned} ${LOG_ON}`) ?? named(`${twinned} ${LOG_OFF}`);
      return named(twinned) || firstHere?.[0] !== name ? [] : twinRuns(twinned, round);
    });
  const insertsRow = INSERTS[store.url.startsWith('postgres') ? 'postgres' : 'sqlite'];
  let drainMs: number | null = null;
  const probe = openDatabase(store.url, { poolSize: 1 });
  try {
    for (round = 1; round <= ROUNDS; round++) {
      if (round > 1) await restartTwins();
      process.stdout.write(`  round ${round} of ${ROUNDS}:`);
      let before = await measure(ceilingSpec);
      record(ceilingScenario, before, 1);
      let inserts: Measured | undefined;
      for (const [scenario, spec] of roundOrder(round)) {
        const againstInserts = AGAINST_INSERTS.includes(scenario);
        if (againstInserts && !inserts) {
          inserts = await insertBaseline(store.url, seeded.throwaway);
          record(insertsRow, inserts, NaN);
        }
        // A mixed load's requests are made by a script in the load generator (wrk's Lua),
        // which costs it ~15% of its rate: its ceiling is the same script against node:http,
        // run around it, so the ratio is the service's cost alone.
        const ceilingFor = spec.mix ? { ...ceilingSpec, mix: spec.mix } : ceilingSpec;
        const mixedBefore = spec.mix ? await measure(ceilingFor) : before;
        const served = serving(spec.url)?.pid;
        const result = await measure(
          spec,
          served === undefined ? [] : [served, ...(redisUrl ? storePids() : [])],
        );
        if (spec.url.endsWith('/messages')) {
          const stoppedAt = Date.now();
          while ((await countUnsettled(probe.reader)) > 0 && Date.now() - stoppedAt < 60_000) {
            await new Promise((r) => setTimeout(r, 50));
          }
          drainMs = Math.max(drainMs ?? 0, Date.now() - stoppedAt);
        }
        // The ceiling server needs no warm-up after its first run.
        const after = await load({ ...ceilingFor, connections: CONNECTIONS, seconds: SECONDS });
        const ceilingNow = (mixedBefore.requestsPerSecond + after.requestsPerSecond) / 2;
        record(
          scenario,
          result,
          result.requestsPerSecond / ceilingNow,
          againstInserts && inserts
            ? result.requestsPerSecond / inserts.requestsPerSecond
            : undefined,
        );
        if (spec.mix) {
          record(MIXED_CEILING, after, 1);
        } else {
          record(ceilingScenario, after, 1);
          before = after;
        }
      }
      // The log's cost this round: the ratio of the twins' summed rates.
      for (const [scenario] of measured) {
        const thisRound = (name: string) =>
          (runs.get(name) ?? [])
            .filter((run) => run.round === round)
            .reduce((sum, run) => sum + run.requestsPerSecond, 0);
        const [on, off] = [thisRound(`${scenario} ${LOG_ON}`), thisRound(`${scenario} ${LOG_OFF}`)];
        if (on > 0 && off > 0)
          vsLogOff.set(scenario, [...(vsLogOff.get(scenario) ?? []), on / off]);
      }
      process.stdout.write(' req/s\n');
    }
  } finally {
    await probe.close();
  }
  const rowNames = scenarios.map(([scenario]) => scenario);
  if (runs.has(MIXED_CEILING)) rowNames.splice(1, 0, MIXED_CEILING);
  if (runs.has(insertsRow)) {
    rowNames.splice(
      rowNames.findIndex((name) => AGAINST_INSERTS.includes(name)),
      0,
      insertsRow,
    );
  }
  for (const scenario of rowNames) {
    const all = runs.get(scenario) ?? [];
    const vsInserts = all.flatMap((run) => (run.vsInserts === undefined ? [] : [run]));
    const logCost = vsLogOff.get(scenario) ?? [];
    rows.push({
      mode,
      scenario,
      ...median(all, (run) => run.requestsPerSecond),
      ...(all.some((run) => run.cpuUs !== undefined) && {
        cpuUs: median(all, (run) => run.cpuUs ?? 0).cpuUs,
      }),
      ratio: median(all, (run) => run.ratio).ratio,
      ...(vsInserts.length > 0 && {
        vsInserts: median(vsInserts, (run) => run.vsInserts ?? 0).vsInserts,
      }),
      ...(logCost.length > 0 && {
        vsLogOff: medianValue(logCost),
        vsLogOffRounds: logCost,
      }),
      // Non-2xx answers in every round, not the median's alone.
      errors: all.reduce((sum, r) => sum + r.errors, 0),
      rounds: all.map((r) => Math.round(r.requestsPerSecond)),
    });
  }
  const rss = rssMb(service.pid);
  // BENCH_MEMORY=1: three one-minute GET runs, the service's RSS after each.
  const memory: number[] = [];
  if (process.env.BENCH_MEMORY === '1') {
    for (let run = 0; run < 3; run++) {
      await load({
        url: `${base}/v1/pets?limit=20`,
        headers: auth,
        connections: CONNECTIONS,
        seconds: 60,
      });
      memory.push(rssMb(service.pid));
      process.stdout.write(`  memory run ${run + 1}: RSS ${memory.at(-1)} MB\n`);
    }
  }
  await stopAll();
  await store.drop();
  return { rows, drainMs, rssMb: rss, memoryRunsMb: memory };
}

process.stdout.write(
  pinned
    ? `servers on core ${pinned.server}, load (${tool}) on core(s) ${pinned.load}\n`
    : `no pinning (${tool}): the kernel places servers and load\n`,
);
const modes: Array<Awaited<ReturnType<typeof runMode>> & { mode: string }> = [];
const sqliteDir = mkdtempSync(join(tmpdir(), 'animal-store-bench-db-'));
try {
  modes.push({
    mode: 'embedded',
    ...(await runMode('embedded', {
      url: `sqlite:${join(sqliteDir, 'bench.db')}`,
      drop: async () => rmSync(sqliteDir, { recursive: true, force: true }),
      // The seed closed the file, checkpointed: a copy of it alone is the whole store.
      copy: (name) => {
        const file = join(sqliteDir, `${name}.db`);
        copyFileSync(join(sqliteDir, 'bench.db'), file);
        return `sqlite:${file}`;
      },
    })),
  });
  if (process.env.DATABASE_URL?.startsWith('postgres') && process.env.REDIS_URL) {
    const pg = await freshPostgres(process.env.DATABASE_URL, 'animal_store_bench');
    modes.push({
      mode: 'postgres+redis',
      ...(await runMode('postgres+redis', pg, process.env.REDIS_URL)),
    });
  }
} finally {
  // A run that failed leaves no server behind on the servers' core.
  await stopAll();
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const lines = [
  '',
  `| mode | scenario | req/s | p50 ms | p99 ms | × ceiling | × inserts | CPU µs/req | non-2xx |`,
  '|---|---|---:|---:|---:|---:|---:|---:|---:|',
];
for (const { rows } of modes) {
  for (const r of rows) {
    const ratio = Number.isFinite(r.ratio) ? fmt(r.ratio, 2) : '–';
    const baseline = Object.values<string>(INSERTS).includes(r.scenario);
    const inserts = baseline ? '1.00' : r.vsInserts && fmt(r.vsInserts, 2);
    const cpu = r.cpuUs === undefined ? '' : fmt(r.cpuUs, 1);
    lines.push(
      `| ${r.mode} | ${r.scenario} | ${fmt(r.requestsPerSecond)} | ${fmt(r.p50Ms, 2)} | ${fmt(r.p99Ms, 2)} | ${ratio} | ${inserts ?? ''} | ${cpu} | ${r.errors} |`,
    );
  }
}
console.log(lines.join('\n'));

// The targets of issue 9, as ratios measured in this run.
const rowOf = (mode: string, prefix: string) =>
  modes.find((m) => m.mode === mode)?.rows.find((r) => r.scenario.startsWith(prefix));
const checks: Array<[string, boolean | undefined]> = [];
const embedded = modes[0];
const first = rowOf('embedded', 'GET /v1/pets?limit=20');
const deep = rowOf('embedded', 'GET /v1/pets?limit=20 (deep');
const pets = rowOf('embedded', 'POST /v1/pets');
const messages = rowOf('embedded', 'POST /messages');
checks.push(['GET /v1/pets ≥ 0.50 × ceiling', first && first.ratio >= 0.5]);
checks.push(['GET /v1/pets p99 ≤ 10 ms', first && first.p99Ms <= 10]);
checks.push(['deep page ≥ 0.95 × first page', first && deep && deep.ratio >= 0.95 * first.ratio]);
checks.push(['POST /v1/pets ≥ 0.25 × ceiling', pets && pets.ratio >= 0.25]);
checks.push(['POST /messages ≥ 0.25 × ceiling', messages && messages.ratio >= 0.25]);
checks.push([
  'queue drained ≤ 5 s after the load',
  messages && embedded && embedded.drainMs !== null && embedded.drainMs <= 5_000,
]);
checks.push(['no non-2xx answers', modes.every((m) => m.rows.every((r) => r.errors === 0))]);
const pgGet = rowOf('postgres+redis', 'GET /v1/pets?limit=20');
if (pgGet) checks.push(['PostgreSQL + Redis GET ≥ 0.25 × ceiling', pgGet.ratio >= 0.25]);
// Issue 19: PostgreSQL writes close to what PostgreSQL itself sustains of the same insert.
const pgPets = rowOf('postgres+redis', 'POST /v1/pets');
if (pgPets) {
  checks.push(['POST /v1/pets ≥ 0.6 × insert baseline', (pgPets.vsInserts ?? 0) >= 0.6]);
}
const pgMessages = rowOf('postgres+redis', 'POST /messages');
if (pgMessages) {
  checks.push(['POST /messages ≥ 0.4 × insert baseline', (pgMessages.vsInserts ?? 0) >= 0.4]);
}
// Issue 32: a POST with an Idempotency-Key (random, UUIDv4-shaped: the SDK keys every POST)
// runs at half the rate of one without, at least. (Issue 21 hoped for 0.9; the kept answer is
// an insert into a randomly ordered index, in the change's transaction.)
for (const mode of modes) {
  for (const post of ['POST /v1/pets', 'POST /messages']) {
    const plain = rowOf(mode.mode, post);
    const keyed = rowOf(mode.mode, `${post} ${KEYED}`);
    if (plain && keyed) {
      checks.push([
        `${mode.mode}: ${post} with keys ≥ 0.5 × without`,
        keyed.ratio >= 0.5 * plain.ratio,
      ]);
    }
  }
}
// Issue 34: the request log costs at most 10% of each figure, against the instance without it
// run beside it in each round. Its CPU a request is printed beside: it moves far less than the
// rates on a shared VM.
const logCosts: string[] = [];
for (const mode of modes) {
  // Each twinned scenario (the start of its name) and what its lines call it.
  for (const [scenario, called] of [
    ['GET /v1/pets?limit=20', 'GET /v1/pets?limit=20'],
    ['POST /v1/pets', 'POST /v1/pets'],
    [`${MIX} 90% reads`, '20 tenants, 90/10 mix'],
  ]) {
    const twinned = mode.rows.find((r) => r.scenario.startsWith(scenario));
    const [on, off] = [LOG_ON, LOG_OFF].map((suffix) =>
      mode.rows.find((r) => r.scenario.startsWith(scenario) && r.scenario.endsWith(suffix)),
    );
    if (twinned?.vsLogOff === undefined || !on || !off) continue;
    if (on.cpuUs !== undefined && off.cpuUs !== undefined) {
      logCosts.push(
        `${mode.mode}: ${called}: ${fmt(twinned.vsLogOff, 2)} × the rate without the request ` +
          `log (rounds ${(twinned.vsLogOffRounds ?? []).map((r) => fmt(r, 2)).join(', ')}); ` +
          `${fmt(on.cpuUs, 1)} µs of CPU a request with it, ${fmt(off.cpuUs, 1)} ` +
          `without (${fmt((on.cpuUs / off.cpuUs - 1) * 100, 1)}%)`,
      );
    }
    checks.push([
      `${mode.mode}: ${called} with the request log ≥ 0.9 × without`,
      twinned.vsLogOff >= 0.9,
    ]);
  }
}
const mixReads = rowOf('embedded', `${MIX} reads`);
const mixed = rowOf('embedded', `${MIX} 90%`);
checks.push(['20 tenants, reads ≥ 0.55 × ceiling', mixReads && mixReads.ratio >= 0.55]);
checks.push(['20 tenants, 90/10 mix ≥ 0.40 × ceiling', mixed && mixed.ratio >= 0.4]);
checks.push(['20 tenants, 90/10 mix p99 ≤ 15 ms', mixed && mixed.p99Ms <= 15]);
const pgMixed = rowOf('postgres+redis', `${MIX} 90%`);
if (pgMixed) {
  checks.push(['PostgreSQL + Redis 90/10 mix ≥ 0.25 × ceiling', pgMixed.ratio >= 0.25]);
}
// BENCH_MEMORY=1: under 200 MB after each one-minute run, and not growing (the last run within
// 5% of the first: RSS moves a few MB with every major collection).
for (const { mode, memoryRunsMb: runs } of modes) {
  const [firstRun, lastRun] = [runs[0], runs.at(-1)];
  if (firstRun === undefined || lastRun === undefined) continue;
  checks.push([`${mode}: RSS < 200 MB after each one-minute run`, runs.every((mb) => mb < 200)]);
  checks.push([`${mode}: RSS not growing across the runs`, lastRun <= firstRun * 1.05]);
}
console.log('');
for (const { mode, drainMs, rssMb, memoryRunsMb } of modes) {
  if (memoryRunsMb.length > 0) {
    console.log(`${mode}: RSS after three one-minute GET runs: ${memoryRunsMb.join(', ')} MB`);
  }
  console.log(
    `${mode}: queue drained ${drainMs === null ? '?' : fmt(drainMs / 1000, 1)} s after the messages load; service RSS ${rssMb} MB at the end`,
  );
}
for (const line of logCosts) console.log(line);
for (const [label, ok] of checks) {
  console.log(`${ok ? 'PASS' : ok === undefined ? 'n/a ' : 'MISS'} ${label}`);
}
if (ONLY) {
  console.log(`\nBENCH_ONLY=${ONLY}: a partial run, not written to bench/results/latest.json`);
  process.exit(0);
}

const results = {
  date: new Date().toISOString(),
  machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
  tool,
  pinned: pinned ?? null,
  connections: CONNECTIONS,
  seconds: SECONDS,
  rounds: ROUNDS,
  pets: PETS,
  modes,
  targets: Object.fromEntries(checks.map(([label, ok]) => [label, Boolean(ok)])),
};
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(join(ROOT, 'bench/results/latest.json'), `${JSON.stringify(results, null, 2)}\n`);
console.log('\nWritten to bench/results/latest.json');
